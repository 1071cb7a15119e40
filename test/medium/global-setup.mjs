// Starts ONE embedded PostgreSQL (free port, temporary data folder) for the whole medium project.
// Each test file then creates its own database in it (test/medium/database.ts), so files run in
// parallel without seeing each other's rows.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, startPostgres } from '../../tools/lib/stack.mjs';

export default async function globalSetup() {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kb-medium-'));
  mkdirSync(path.join(dataDir, 'logs'), { recursive: true });
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  globalThis.__KB_MEDIUM_PG__ = await startPostgres(dataDir, port, password);
  process.env.KB_MEDIUM_DATA_DIR = dataDir;
  // The maintenance database: test files connect here only to create their own database.
  process.env.KB_MEDIUM_DATABASE_URL = `postgres://postgres:${password}@127.0.0.1:${port}/kb`;
}
