import { rmSync } from 'node:fs';

export default async function globalTeardown() {
  const stack = globalThis.__KB_STACK__;
  if (stack) await stack.stop();
  if (process.env.KB_E2E_DATA_DIR && !process.env.KB_E2E_KEEP_DATA) rmSync(process.env.KB_E2E_DATA_DIR, { recursive: true, force: true });
}
