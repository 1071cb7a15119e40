import { DataSource, DataSourceOptions, EntitySchema, MixedList } from 'typeorm';

/**
 * Opens a TypeORM DataSource on PostgreSQL bound to one schema (each service owns its schema),
 * creates the schema if missing and runs pending migrations. `synchronize` is never used. Every
 * connection's search_path is the schema, so raw SQL needs no qualification.
 *
 * @param options.url PostgreSQL connection URL (DATABASE_URL).
 * @param options.schema the service's schema, e.g. `documents`.
 * @throws when the database is unreachable or a migration fails.
 */
export async function openDatabase(options: {
  url: string;
  schema: string;
  entities: MixedList<Function | string | EntitySchema>;
  migrations: MixedList<Function | string>;
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
  } as DataSourceOptions);
  await dataSource.initialize();
  await dataSource.runMigrations({ transaction: 'each' });
  return dataSource;
}
