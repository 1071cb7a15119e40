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

/**
 * A fresh test database for the enclosing `describe` block (or spec file): a `beforeAll` creates it
 * with {@link createTestDatabase} and opens it with `open`, and an `afterAll` closes it.
 * @param label part of the database name (as for {@link createTestDatabase}).
 * @param open the service's own open*Database function (it runs the service's migrations).
 * @returns a function giving the open connection; it throws when called before the `beforeAll` ran
 *   (e.g. while the tests are being collected).
 */
export function useTestDatabase<T extends { destroy(): Promise<unknown> }>(label: string, open: (url: string) => Promise<T>): () => T {
  let db: T | undefined;
  beforeAll(async () => {
    db = await open(await createTestDatabase(label));
  });
  afterAll(async () => {
    await db?.destroy();
  });
  return () => {
    if (!db) throw new Error(`useTestDatabase('${label}'): the database is open only while the tests run (after beforeAll)`);
    return db;
  };
}
