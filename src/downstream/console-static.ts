import { serveStatic } from '@hono/node-server/serve-static';
import { Hono } from 'hono';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../config/default-config.js';

/** Where `npm run build` puts the web console. */
export function consoleDistDir(): string {
  return join(packageRoot(), 'web', 'dist');
}

/**
 * The web console at /: its built files, and index.html for every other GET so that the console's own paths
 * (/sessions/…, /audit) load on reload. Paths under /api never fall back to the page: an unknown API route is a 404.
 */
export function createConsoleApp(dir: string = consoleDistDir()): Hono {
  const app = new Hono();
  app.all('/api/*', (c) => c.json({ error: { code: 'not_found', message: `no API route ${c.req.path}` } }, 404));
  if (!existsSync(join(dir, 'index.html'))) {
    app.get('*', (c) =>
      c.text(
        `The web console is not built (no ${join(dir, 'index.html')}).\nBuild it with \`npm run build\` in the toolgate directory, then reload.\n`,
        503,
      ),
    );
    return app;
  }
  app.use(
    '/assets/*',
    serveStatic({
      root: dir,
      // File names under assets/ carry a content hash, so they never change.
      onFound: (_path, c) => c.header('Cache-Control', 'public, max-age=31536000, immutable'),
    }),
  );
  app.use('*', serveStatic({ root: dir }));
  app.get(
    '*',
    serveStatic({ root: dir, path: 'index.html', onFound: (_path, c) => c.header('Cache-Control', 'no-cache') }),
  );
  return app;
}
