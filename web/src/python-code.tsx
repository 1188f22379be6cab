import type { ReactNode } from 'react';

// A small Python tokenizer is enough to read a script before approving it: keywords, strings, comments, numbers.
// It never has to be right about every corner of the grammar, only never lose or reorder a character.

const keywords = new Set(
  (
    'False None True and as assert async await break class continue def del elif else except finally for from ' +
    'global if import in is lambda nonlocal not or pass raise return try while with yield match case'
  ).split(' '),
);

const builtins = new Set(
  (
    'print len range enumerate zip sorted reversed min max sum any all map filter list dict set tuple str int ' +
    'float bool open isinstance repr round abs sleep call call_many call_raw progress ToolError'
  ).split(' '),
);

const tokenPattern =
  /(#[^\n]*)|((?:[rRbBuUfF]{1,2})?(?:"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?))|(\b(?:0[xXoObB][\da-fA-F_]+|\d[\d_]*(?:\.\d*)?(?:[eE][+-]?\d+)?j?)\b)|([A-Za-z_]\w*)/g;

export type TokenKind = 'comment' | 'string' | 'number' | 'keyword' | 'builtin' | 'definition' | 'plain';

export interface Token {
  kind: TokenKind;
  text: string;
}

/** Splits Python source into tokens whose texts, joined, give back the source exactly. */
export function tokenizePython(source: string): Token[] {
  const tokens: Token[] = [];
  let last = 0;
  let previousWord = '';
  for (const match of source.matchAll(tokenPattern)) {
    const start = match.index;
    if (start > last) tokens.push({ kind: 'plain', text: source.slice(last, start) });
    const [text, comment, string, number, word] = match;
    if (comment !== undefined) tokens.push({ kind: 'comment', text });
    else if (string !== undefined) tokens.push({ kind: 'string', text });
    else if (number !== undefined) tokens.push({ kind: 'number', text });
    else if (word !== undefined) {
      const kind: TokenKind = keywords.has(word)
        ? 'keyword'
        : previousWord === 'def' || previousWord === 'class'
          ? 'definition'
          : builtins.has(word)
            ? 'builtin'
            : 'plain';
      tokens.push({ kind, text });
      previousWord = word;
    }
    last = start + text.length;
  }
  if (last < source.length) tokens.push({ kind: 'plain', text: source.slice(last) });
  return tokens;
}

/** A Python script, highlighted, in a scrollable block. */
export function PythonCode({ source, label }: { source: string; label?: string }) {
  const parts: ReactNode[] = tokenizePython(source).map((token, index) =>
    token.kind === 'plain' ? (
      token.text
    ) : (
      <span key={index} className={`tok-${token.kind}`}>
        {token.text}
      </span>
    ),
  );
  return (
    <pre className="code" tabIndex={0} aria-label={label ?? 'Python script'}>
      <code>{parts}</code>
    </pre>
  );
}
