import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/**
 * A fresh, empty PostgreSQL database in the medium project's server (test/medium/global-setup.mjs),
 * so each test file sees only its own rows and files can run in parallel.
 * @param label part of the database name, for reading the server's log (lowercase letters, digits, `_`).
 * @returns its connection URL (open it with the service's own open*Database function, which runs
 *   the service's migrations exactly as in production).
 * @throws Error when the medium project's PostgreSQL is not running (KB_MEDIUM_DATABASE_URL unset).
 */
export async function createTestDatabase(label: string): Promise<string> {
  const admin = process.env.KB_MEDIUM_DATABASE_URL;
  if (!admin)
    throw new Error('KB_MEDIUM_DATABASE_URL is not set: run medium tests with `npx jest --selectProjects medium` (its globalSetup starts PostgreSQL).');
  const name = `t_${label}_${randomBytes(4).toString('hex')}`;
  const client = new Client({ connectionString: admin });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE "${name}"`);
  } finally {
    await client.end();
  }
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return url.toString();
}
