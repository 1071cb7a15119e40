// Build of the review workspace (issue 31): a React single-page app served by the gateway at /app/
// (decisions.md "Review workspace"). `node tools/build.mjs` runs `vite build` into dist/web; the
// SDK is taken from source through its browser entry (no `node:` imports on that path).
import react from '@vitejs/plugin-react';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');

export default defineConfig({
  root: here,
  base: '/app/',
  plugins: [react()],
  resolve: {
    alias: [
      { find: '@kb-platform/sdk/browser', replacement: path.join(root, 'packages/sdk/src/browser.ts') },
      // csv-parse's Node build needs Node's Buffer; its browser build bundles what it needs.
      { find: /^csv-parse\/sync$/, replacement: createRequire(import.meta.url).resolve('csv-parse/browser/esm/sync') },
    ],
  },
  build: {
    outDir: path.join(root, 'dist/web'),
    emptyOutDir: true,
    sourcemap: true,
    chunkSizeWarningLimit: 2000,
  },
  logLevel: 'warn',
});
