import type { MigrationInterface, QueryRunner } from 'typeorm';

/** A migration class as TypeORM's `migrations` option takes it. */
export type MigrationClass = new () => MigrationInterface;

/**
 * A TypeORM migration made of SQL statements: `up` runs them in order, `down` runs its own in
 * order (unqualified names resolve in the service's schema: openDatabase sets the search_path).
 * TypeORM records a migration by its `name` in the schema's `migrations` table and reads its
 * timestamp from the name's last 13 digits, so a released name is never changed.
 *
 * @param name `<Title><13-digit epoch ms>`, e.g. `InitBatches1732300000000` (also the class name).
 * @param sql.up statements applying the change; sql.down statements undoing it.
 * @returns the migration class (each service lists its classes in its database.ts).
 * @throws Error at definition when the name does not end in a 13-digit timestamp.
 */
export function sqlMigration(name: string, sql: { up: readonly string[]; down: readonly string[] }): MigrationClass {
  if (!/\d{13}$/.test(name)) throw new Error(`migration name ${name} must end in a 13-digit timestamp`);
  const migration = class implements MigrationInterface {
    readonly name = name;

    async up(q: QueryRunner): Promise<void> {
      for (const statement of sql.up) await q.query(statement);
    }

    async down(q: QueryRunner): Promise<void> {
      for (const statement of sql.down) await q.query(statement);
    }
  };
  Object.defineProperty(migration, 'name', { value: name });
  return migration;
}
