import { rmSync } from 'node:fs';

export default async function globalTeardown() {
  await globalThis.__KB_MEDIUM_PG__?.stop();
  if (process.env.KB_MEDIUM_DATA_DIR && !process.env.KB_MEDIUM_KEEP_DATA) rmSync(process.env.KB_MEDIUM_DATA_DIR, { recursive: true, force: true });
}
