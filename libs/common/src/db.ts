import { DataSource, DataSourceOptions } from 'typeorm';

/**
 * Opens a TypeORM DataSource on PostgreSQL bound to one schema (each service owns its schema),
 * creates the schema if missing and runs pending migrations. `synchronize` is never used. Every
 * connection's search_path is the schema, so raw SQL needs no qualification. Concurrent starts
 * of several replicas are serialised by a PostgreSQL advisory lock. Started with the argument
 * `--migrate-only` (the Helm chart's migration Job), the process exits 0 once migrations are done.
 *
 * @param options.url PostgreSQL connection URL (DATABASE_URL).
 * @param options.schema the service's schema, e.g. `documents`.
 * @throws when the database is unreachable or a migration fails.
 */
export async function openDatabase(options: {
  url: string;
  schema: string;
  // TypeORM's own types for these (lists of entity classes, schemas and globs; migration classes and globs).
  entities: NonNullable<DataSourceOptions['entities']>;
  migrations: NonNullable<DataSourceOptions['migrations']>;
  poolSize?: number;
}): Promise<DataSource> {
  const bootstrap = new DataSource({ type: 'postgres', url: options.url });
  await bootstrap.initialize();
  try {
    await bootstrap.query(`CREATE SCHEMA IF NOT EXISTS "${options.schema}"`);
  } finally {
    await bootstrap.destroy();
  }
  const dataSource = new DataSource({
    type: 'postgres',
    url: options.url,
    schema: options.schema,
    entities: options.entities,
    migrations: options.migrations,
    migrationsTableName: 'migrations',
    migrationsRun: false,
    synchronize: false,
    // Unqualified SQL (migrations, raw queries) resolves in the service's own schema.
    extra: { max: options.poolSize ?? 10, options: `-c search_path="${options.schema}"` },
  });
  await dataSource.initialize();
  // Replicas starting together migrate one at a time: a session-level advisory lock per schema.
  const lock = dataSource.createQueryRunner();
  await lock.connect();
  try {
    await lock.query('SELECT pg_advisory_lock(hashtext($1))', [`kb-migrations:${options.schema}`]);
    await dataSource.runMigrations({ transaction: 'each' });
  } finally {
    await lock.query('SELECT pg_advisory_unlock(hashtext($1))', [`kb-migrations:${options.schema}`]).catch(() => undefined);
    await lock.release();
  }
  // [deploy] `<service> --migrate-only` (the Helm chart's pre-install/pre-upgrade Job): migrate the
  // schema, then exit before the service starts serving.
  if (process.argv.includes('--migrate-only')) {
    const applied = await dataSource.query<{ n: number | null }[]>('SELECT count(*)::int AS n FROM migrations').catch(() => [{ n: null }]);
    await dataSource.destroy();
    process.stdout.write(
      `${JSON.stringify({ level: 30, time: new Date().toISOString(), schema: options.schema, migrations: applied[0]?.n, msg: 'migrations applied; exiting (--migrate-only)' })}\n`,
    );
    process.exit(0);
  }
  return dataSource;
}

/**
 * TypeORM column transformer for PostgreSQL `bigint`, which `pg` returns as a string: maps it to
 * a JavaScript number. Only for values far below 2^53 (byte sizes, counters, quotas).
 */
export const bigintAsNumber = {
  to: (v: number | null) => v,
  from: (v: string | null) => (v === null ? null : Number(v)),
};

/**
 * Rows returned by a raw statement (`DataSource.query` / `EntityManager.query`): TypeORM's
 * PostgreSQL driver answers UPDATE/DELETE … RETURNING with `[rows, affectedCount]` and
 * SELECT/INSERT with the rows themselves. Every repository reads RETURNING rows through this.
 * @returns the rows (an empty array for a statement that returned none).
 */
export function rowsOf<T>(result: unknown): T[] {
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') return result[0] as T[];
  return (result as T[]) ?? [];
}
