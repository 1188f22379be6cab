import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Built by `npm run build` into web/dist, which the gateway serves at /.
export default defineConfig({
  root: import.meta.dirname,
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: true },
  server: { proxy: { '/api': 'http://127.0.0.1:8717' } },
});
