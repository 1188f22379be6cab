import { Client, SdkError, SdkErrorCode, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { CallToolResult, ElicitRequest, ElicitResult, Tool, Transport } from '@modelcontextprotocol/client';
import { AsyncLocalStorage } from 'node:async_hooks';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { isStdioServer, type ServerConfig } from '../config/config-schema.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { Logger } from '../log/logger.js';
import { backoffDelayMs, buildServiceEnvironment } from './service-environment.js';

export type ServiceStateName = 'starting' | 'up' | 'down';

export interface ServiceState {
  state: ServiceStateName;
  since: number;
  error?: string;
  protocolVersion?: string;
  reconnects: number;
}

/** Passes a service's elicitation request on to the person behind the calling client. */
export type ElicitationForwarder = (params: ElicitRequest['params']) => Promise<ElicitResult>;

export interface ToolCallOptions {
  signal?: AbortSignal;
  timeoutMs: number;
  /** Absent (scripts, clients without elicitation): the service's elicitation is declined. */
  forwardElicitation?: ElicitationForwarder;
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
}

export interface ServiceConnectionOptions {
  name: string;
  config: ServerConfig;
  logger: Logger;
  environment: NodeJS.ProcessEnv;
  onStateChange: (name: string, state: ServiceState) => void;
  onToolsChange: (name: string, tools: Tool[]) => void;
  version: string;
}

/** One configured MCP server: connects, negotiates the era, lists tools, reconnects with backoff. */
export class ServiceConnection {
  readonly name: string;
  private client: Client | undefined;
  private currentTools: Tool[] = [];
  private current: ServiceState = { state: 'starting', since: Date.now(), reconnects: 0 };
  private attempt = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** The forwarder of the call a service's elicitation belongs to, when the SDK runs its handler inside it. */
  private readonly callContext = new AsyncLocalStorage<{ forward: ElicitationForwarder | undefined }>();
  private readonly inflight = new Set<{ forward: ElicitationForwarder | undefined }>();

  constructor(private readonly options: ServiceConnectionOptions) {
    this.name = options.name;
  }

  state(): ServiceState {
    return this.current;
  }

  tools(): Tool[] {
    return this.current.state === 'up' ? this.currentTools : [];
  }

  start(): Promise<void> {
    return this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => undefined);
  }

  async callTool(tool: string, args: Record<string, unknown>, options: ToolCallOptions): Promise<CallToolResult> {
    const client = this.client;
    if (client === undefined || this.current.state !== 'up') {
      throw new GatewayError(
        'unavailable',
        `service ${this.name} is down${this.current.error === undefined ? '' : ` (${this.current.error})`}; its tools are unavailable until it reconnects`,
      );
    }
    const call = { forward: options.forwardElicitation };
    this.inflight.add(call);
    try {
      return await this.callContext.run(call, () =>
        client.callTool(
          { name: tool, arguments: args },
          {
            timeout: options.timeoutMs,
            ...(options.signal === undefined ? {} : { signal: options.signal }),
            ...(options.onProgress === undefined
              ? {}
              : {
                  onprogress: (progress) =>
                    options.onProgress?.({
                      progress: progress.progress,
                      ...(progress.total === undefined ? {} : { total: progress.total }),
                      ...(progress.message === undefined ? {} : { message: progress.message }),
                    }),
                }),
          },
        ),
      );
    } catch (error) {
      throw this.translateCallError(tool, error, options);
    } finally {
      this.inflight.delete(call);
    }
  }

  private translateCallError(tool: string, error: unknown, options: ToolCallOptions): GatewayError {
    if (options.signal?.aborted === true) {
      return new GatewayError('cancelled', `call to ${this.name}__${tool} was cancelled`, { cause: error });
    }
    if (error instanceof SdkError) {
      if (error.code === SdkErrorCode.RequestTimeout) {
        return new GatewayError(
          'timeout',
          `call to ${this.name}__${tool} timed out after ${Math.round(options.timeoutMs / 1000)} s`,
          { cause: error },
        );
      }
      if (error.code === SdkErrorCode.ConnectionClosed || error.code === SdkErrorCode.NotConnected) {
        return new GatewayError('unavailable', `service ${this.name} went down during the call to ${tool}`, {
          cause: error,
        });
      }
    }
    const message = error instanceof Error ? error.message : String(error);
    return new GatewayError('tool_error', `service ${this.name} rejected the call to ${tool}: ${message}`, {
      cause: error,
    });
  }

  private setState(state: ServiceStateName, error?: string): void {
    const protocolVersion = this.client?.getNegotiatedProtocolVersion();
    this.current = {
      state,
      since: Date.now(),
      reconnects: this.current.reconnects + (state === 'up' && this.current.state !== 'starting' ? 1 : 0),
      ...(error === undefined ? {} : { error }),
      ...(state === 'up' && protocolVersion !== undefined ? { protocolVersion } : {}),
    };
    this.options.onStateChange(this.name, this.current);
  }

  private createTransport(config: ServerConfig): Transport {
    if (isStdioServer(config)) {
      const transport = new StdioClientTransport({
        command: config.command,
        args: config.args,
        env: buildServiceEnvironment(this.options.environment, config.env),
        stderr: 'pipe',
        ...(config.cwd === undefined ? {} : { cwd: config.cwd }),
      });
      const stderr = transport.stderr;
      if (stderr !== null) {
        const serviceLog = this.options.logger.child(`service:${this.name}`);
        createInterface({ input: stderr as Readable }).on('line', (line) => serviceLog.info(line.slice(0, 2000)));
      }
      return transport;
    }
    return new StreamableHTTPClientTransport(new URL(config.url), { requestInit: { headers: config.headers } });
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new Client(
      { name: 'toolgate', version: this.options.version },
      {
        capabilities: { elicitation: { form: {} } },
        versionNegotiation: { mode: 'auto', probe: { timeoutMs: 5_000 } },
        listChanged: {
          tools: {
            onChanged: (error, tools) => {
              if (error !== null || tools === null || client !== this.client) return;
              this.currentTools = tools;
              this.options.onToolsChange(this.name, tools);
            },
          },
        },
      },
    );
    client.setRequestHandler('elicitation/create', (request) => this.forwardElicitation(request.params));
    try {
      await client.connect(this.createTransport(this.options.config), { timeout: 30_000 });
      const { tools } = await client.listTools();
      if (this.closed) {
        await client.close();
        return;
      }
      this.client = client;
      this.currentTools = tools;
      this.attempt = 0;
      client.onclose = () => this.handleClose(client);
      this.setState('up');
      this.options.onToolsChange(this.name, tools);
      this.options.logger.info(`service ${this.name} is up`, {
        tools: tools.length,
        protocol: client.getNegotiatedProtocolVersion(),
      });
    } catch (error) {
      await client.close().catch(() => undefined);
      const message = error instanceof Error ? error.message : String(error);
      this.options.logger.warn(`service ${this.name} failed to start: ${message.slice(0, 300)}`);
      this.markDownAndRetry(`failed to start: ${message.slice(0, 200)}`);
    }
  }

  /**
   * A 2026-era service's question arrives inside its call (the SDK fulfils input-required in the call's async
   * context); a 2025-era request carries no link to its call, so it goes to the only call in flight, if one.
   */
  private async forwardElicitation(params: ElicitRequest['params']): Promise<ElicitResult> {
    const call = this.callContext.getStore() ?? (this.inflight.size === 1 ? [...this.inflight][0] : undefined);
    if (call?.forward === undefined) return { action: 'decline' };
    return call.forward(params);
  }

  private handleClose(client: Client): void {
    if (client !== this.client || this.closed) return;
    this.client = undefined;
    this.options.logger.warn(`service ${this.name} disconnected`);
    this.markDownAndRetry('disconnected');
    this.options.onToolsChange(this.name, []);
  }

  private markDownAndRetry(reason: string): void {
    if (this.closed) return;
    this.setState('down', reason);
    const delay = backoffDelayMs(this.attempt++);
    this.retryTimer = setTimeout(() => void this.connect(), delay);
    this.retryTimer.unref();
  }
}
