import type { CallToolResult } from '@modelcontextprotocol/client';

/** The one shape every call result takes inside the gateway (and, as JSON, inside a script). */
export interface NormalisedResult {
  text: string;
  structured: Record<string, unknown> | undefined;
  isError: boolean;
}

function describeBlock(block: CallToolResult['content'][number]): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'image':
    case 'audio':
      return `[${block.type} ${block.mimeType}, ${Math.floor((block.data.length * 3) / 4)} bytes]`;
    case 'resource':
      return 'text' in block.resource ? block.resource.text : `[resource ${block.resource.uri}]`;
    case 'resource_link':
      return `[resource link ${block.uri}]`;
  }
}

export function normaliseResult(result: CallToolResult): NormalisedResult {
  const content = Array.isArray(result.content) ? result.content : [];
  const structured =
    result.structuredContent !== null && typeof result.structuredContent === 'object'
      ? (result.structuredContent as Record<string, unknown>)
      : undefined;
  const text = content.map(describeBlock).join('\n');
  return {
    text: text === '' && structured !== undefined ? JSON.stringify(structured) : text,
    structured,
    isError: result.isError === true,
  };
}

/** A short, single-line summary for audit records and calls.jsonl. */
export function summariseResult(result: NormalisedResult, maxChars = 200): string {
  const flat = result.text.replace(/\s+/g, ' ').trim();
  const prefix = result.isError ? 'error: ' : '';
  return prefix + (flat.length > maxChars ? `${flat.slice(0, maxChars)}…` : flat);
}
