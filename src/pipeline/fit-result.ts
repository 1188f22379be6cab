import type { NormalisedResult } from './normalise-result.js';

export interface FittedResult {
  text: string;
  structured: Record<string, unknown> | undefined;
  cut: boolean;
}

/**
 * A direct call's result as the model receives it: whole when it fits, else the head of the text with the
 * path of the full copy. Structured content is dropped when cut, since it would carry the same bulk.
 */
export function fitResult(result: NormalisedResult, maxChars: number, fullPath: string): FittedResult {
  const structuredText = result.structured === undefined ? '' : JSON.stringify(result.structured);
  const size = Math.max(result.text.length, structuredText.length);
  if (size <= maxChars) return { text: result.text, structured: result.structured, cut: false };
  const source = result.text.length > 0 ? result.text : structuredText;
  const head = source.slice(0, maxChars);
  return {
    text:
      `${head}\n\n[toolgate: result cut at ${maxChars} of ${source.length} characters; ` +
      `the full result is saved in the session workspace at ${fullPath} — read it with read_workspace_file]`,
    structured: undefined,
    cut: true,
  };
}
