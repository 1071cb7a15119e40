import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ROOT } from './support/harness';

/**
 * `<service> --migrate-only`, what the Helm chart's pre-install/pre-upgrade Job runs: applies the
 * service's migrations to the real database and exits 0 without serving (no port is bound, so it
 * runs next to the live stack). A second run is a no-op (migrations are recorded).
 */
describe('--migrate-only (the chart migration Job)', () => {
  // webhooks: without WEBHOOK_SECRET_KEY (the Job gets only DATABASE_URL).
  test.each(['gateway', 'documents', 'webhooks'])('%s migrates its schema and exits 0', (service) => {
    const run = spawnSync(process.execPath, [path.join(ROOT, 'dist/apps', service, 'src/main.js'), '--migrate-only'], {
      env: {
        ...process.env,
        DATABASE_URL: process.env.KB_E2E_DATABASE_URL,
        STORAGE_SIGNING_SECRET: 'x'.repeat(32),
        OTEL_SDK_DISABLED: 'true',
        METRICS_ENABLED: 'false',
      },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
    const done = run.stdout
      .split('\n')
      .filter((l) => l.includes('--migrate-only'))
      .map((l) => JSON.parse(l));
    expect(done).toHaveLength(1);
    expect(done[0].migrations).toBeGreaterThanOrEqual(1);
    expect(run.stdout).not.toContain('"started"');
  });
});
