import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseConfig, connectClient, startTestGateway, textOf, tokens, type TestGateway } from './harness.js';

const everything = {
  command: process.execPath,
  args: ['node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'],
};
let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startTestGateway(
    baseConfig({
      mcpServers: { everything },
      tools: {},
      profiles: { auto: { services: ['everything'], mode: 'auto', tokens: [tokens.auto] } },
    }),
  );
});
afterAll(async () => {
  await gateway.close();
});

describe("a service's elicitation during a direct call", () => {
  it('is forwarded to a 2025-era client that declared elicitation, and its answer returns to the service', async () => {
    const questions: string[] = [];
    const client = await connectClient(gateway.mcpUrl, tokens.auto, 'legacy', {
      capabilities: { elicitation: { form: {} } },
    });
    client.setRequestHandler('elicitation/create', (request) => {
      questions.push((request.params as { message: string }).message);
      return Promise.resolve({ action: 'accept', content: { name: 'Ada Lovelace' } } as never);
    });
    const result = await client.callTool({ name: 'everything__trigger-elicitation-request', arguments: {} });
    expect(questions).toEqual(['Please provide inputs for the following fields:']);
    expect(textOf(result)).toContain('User provided the requested information');
    expect(textOf(result)).toContain('Ada Lovelace');
    await client.close();
  });

  it('is declined for a client that cannot be asked mid-call (2026 era)', async () => {
    const client = await connectClient(gateway.mcpUrl, tokens.auto, 'modern', {
      capabilities: { elicitation: { form: {} } },
    });
    let asked = 0;
    client.setRequestHandler('elicitation/create', () => {
      asked += 1;
      return Promise.resolve({ action: 'accept', content: { name: 'x' } } as never);
    });
    const result = await client.callTool({ name: 'everything__trigger-elicitation-request', arguments: {} });
    expect(textOf(result)).toContain('declined');
    expect(asked).toBe(0);
    await client.close();
  });

  it('is declined inside a script', async () => {
    const client = await connectClient(gateway.mcpUrl, tokens.auto, 'legacy', {
      capabilities: { elicitation: { form: {} } },
    });
    let asked = 0;
    client.setRequestHandler('elicitation/create', () => {
      asked += 1;
      return Promise.resolve({ action: 'accept', content: { name: 'x' } } as never);
    });
    const code =
      'from agent_tools import call_raw\nprint(call_raw("everything__trigger-elicitation-request", {})["text"])';
    const result = await client.callTool({
      name: 'run_script',
      arguments: { code, tools: ['everything__trigger-elicitation-request'], description: 'elicitation in a script' },
    });
    expect(textOf(result)).toContain('declined');
    expect(asked).toBe(0);
    await client.close();
  });
});
