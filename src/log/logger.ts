/** Logs go to stderr as one line each, so stdout stays free for protocol (stdio mode) and CLI output. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  child(tag: string): Logger;
}

export type LogLevel = 'info' | 'warn' | 'error' | 'silent';

const levelOrder: Record<LogLevel, number> = { info: 0, warn: 1, error: 2, silent: 3 };

/** Keys whose values are never printed, wherever they appear in the fields. */
const secretKey = /token|secret|authorization|password|header|env|cookie|key/i;

export function redactFields(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(fields).map(([key, value]) => [key, secretKey.test(key) ? '[redacted]' : value]),
  );
}

export function createLogger(options: { level?: LogLevel; tag?: string; write?: (line: string) => void } = {}): Logger {
  const level = options.level ?? 'info';
  const write = options.write ?? ((line: string) => process.stderr.write(line + '\n'));
  const prefix = options.tag === undefined ? 'toolgate' : `toolgate[${options.tag}]`;
  const emit = (at: Exclude<LogLevel, 'silent'>, message: string, fields?: Record<string, unknown>): void => {
    if (levelOrder[at] < levelOrder[level]) return;
    const extra = fields === undefined ? '' : ' ' + JSON.stringify(redactFields(fields));
    write(`${new Date().toISOString()} ${at.toUpperCase()} ${prefix} ${message}${extra}`);
  };
  return {
    info: (message, fields) => emit('info', message, fields),
    warn: (message, fields) => emit('warn', message, fields),
    error: (message, fields) => emit('error', message, fields),
    child: (tag) => createLogger({ level, write, tag: options.tag === undefined ? tag : `${options.tag}:${tag}` }),
  };
}
