import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { api, baseUrl, newOrg, ROOT } from './support/harness';

// The conformance run of issue 15 (checks that keep the hardening fixed) over the API reference of
// issue 16: schemathesis (PyPI, pinned, cached venv: tools/lib/schemathesis.mjs) generates requests
// for every operation of the served document — its examples, the coverage phase's boundary and
// invalid values, property-based fuzzing, then stateful sequences along the document's links — and checks every response against the document.
// Bounded: SCHEMATHESIS_MAX_EXAMPLES per operation and phase (default 15), a fixed seed unless
// SCHEMATHESIS_SEED is set, so a CI run is repeatable and takes a few minutes.
jest.setTimeout(900_000);

/**
 * Every check schemathesis has (`--checks all`, issue 29 defect 10) but one: no 5xx; a status,
 * content type, headers and body the document declares for that operation; a request the document
 * calls invalid refused (`negative_data_rejection`); a missing required header
 * refused; a method a path does not serve answered 405 with `Allow` (`unsupported_method`), and an
 * `Allow` listing exactly the documented methods (`allow_header_conformance`); a deleted resource
 * gone (`use_after_free`) and a created one there (`ensure_resource_availability`); a request
 * without the key refused (`ignored_auth`). `object_level_authorization` needs a second identity
 * configured and does nothing without one (another organization's resources are a 404: the
 * gateway's own tests). The stateful phase follows the document's links (creation → the
 * operations on the new id) and applies the same checks.
 */
const CHECKS = ['all'];

/**
 * Left out, because it cannot apply to this API: `positive_data_acceptance` (a request valid by
 * the document must be accepted). Some rules of the contract relate several fields or values,
 * which JSON Schema cannot state, so a request the schema allows is rightly a 400: `since` after
 * `until` (audit events), a conversation whose last message is not the user's (chat), a webhook
 * PATCH with none of its fields, a URL that is not absolute http(s), a question that is only
 * blanks. Such requests are the gateway's own 400 tests (gateway-hardening*, webhooks e2e).
 */
const EXCLUDED_CHECKS = ['positive_data_acceptance'];

function schemathesisBin(): { bin?: string; reason?: string } {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'tools/lib/schemathesis.mjs'), 'ensure'], { encoding: 'utf8' });
  if (r.status === 0) return { bin: r.stdout.trim() };
  // PyPI unreachable (exit 2): skipped with the reason, like the real-model tests; any other failure fails.
  if (r.status === 2) return { reason: r.stderr.trim() };
  throw new Error(`schemathesis could not be installed:\n${r.stderr}`);
}

describe('gateway: schemathesis conformance of every operation to the served OpenAPI document', () => {
  const tool = schemathesisBin();
  const org = newOrg('Schemathesis Org', { rateLimit: 100_000 });

  (tool.bin ? it : it.skip)(
    `sends requests for every operation: 0 server errors, 0 responses that differ from the document${tool.reason ? ` (skipped: ${tool.reason})` : ''}`,
    async () => {
      // Some real resources, so that list and get operations also answer 200 with data.
      const project = await api(org.key).post('/api/v2/projects').send({ name: 'Conformance project', description: 'schemathesis' });
      expect(project.status).toBe(201);
      // One run of schemathesis over the served document. Every request it sends is recorded (HAR):
      // the closing note gives their number, which its summary does not (a "test case" of the
      // stateful phase is a sequence of requests).
      const runOnce = () => {
        const workDir = mkdtempSync(path.join(os.tmpdir(), 'kb-schemathesis-'));
        const har = path.join(workDir, 'requests.har');
        const run = spawnSync(
          tool.bin!,
          [
            'run',
            `${baseUrl()}/docs/openapi.json`,
            '--url',
            baseUrl(),
            '-H',
            `Authorization: Bearer ${org.key}`,
            '--checks',
            CHECKS.join(','),
            '--exclude-checks',
            EXCLUDED_CHECKS.join(','),
            '--phases',
            'examples,coverage,fuzzing,stateful',
            '--max-examples',
            process.env.SCHEMATHESIS_MAX_EXAMPLES ?? '15',
            '--seed',
            process.env.SCHEMATHESIS_SEED ?? '16',
            '--workers',
            '2',
            '--request-timeout',
            '60',
            '--suppress-health-check',
            'all',
            '--no-color',
            '--report',
            'har',
            '--report-har-path',
            har,
            // Extra options for a focused run, e.g. `--include-operation-id createCheckRun --report junit --report-dir /tmp/st`.
            ...(process.env.SCHEMATHESIS_ARGS ?? '').split(' ').filter(Boolean),
          ],
          // Its working folder is a temporary one: schemathesis keeps a cache (`.schemathesis/`) there.
          { cwd: workDir, encoding: 'utf8', env: { ...process.env, SCHEMATHESIS_TELEMETRY: 'false', PYTHONUNBUFFERED: '1' }, maxBuffer: 64 * 1024 * 1024 },
        );
        const output = `${run.stdout}${run.stderr}`;
        // The summary (operations, test cases, failures) in the test log, for the closing notes.
        process.stdout.write(`${output.split('\n').slice(-40).join('\n')}\n`);
        const entries: { response?: { status: number } }[] = existsSync(har) ? JSON.parse(readFileSync(har, 'utf8')).log.entries : [];
        const serverErrors = entries.filter((e) => (e.response?.status ?? 0) >= 500).length;
        process.stdout.write(`schemathesis sent ${entries.length} HTTP requests (recorded in its HAR report); ${serverErrors} answered 5xx\n`);
        // Its own failure and error sections (printed before its SUMMARY): which operation failed and why.
        const report = output
          .slice(0, Math.max(0, output.lastIndexOf('SUMMARY')))
          .split(/^=+ (?:FAILURES|ERRORS) =+$/m)
          .slice(1)
          .join('\n');
        // The error groups of its summary ("🚫 Runtime Error: 1"), and whether any check failed.
        const errorGroups = [...output.matchAll(/^\s+🚫 (.+): \d+$/gm)].map((m) => m[1]);
        const failedChecks = /^=+ FAILURES =+$/m.test(output);
        return { exitCode: run.status, entries, serverErrors, report, errorGroups, failedChecks };
      };

      let result = runOnce();
      // An error of schemathesis itself ("Runtime Error": an exception inside the tool, e.g. Hypothesis
      // reporting a flaky test case; seen once in CI on Node 22, not reproduced) with no failed check
      // and no 5xx says nothing about the API: its report is printed and the run is repeated once.
      // A failed check, a 5xx, a network or schema error fails at once.
      if (
        result.exitCode !== 0 &&
        !result.failedChecks &&
        result.serverErrors === 0 &&
        result.errorGroups.length > 0 &&
        result.errorGroups.every((g) => g === 'Runtime Error')
      ) {
        process.stdout.write(
          `schemathesis reported only an error of its own, no failed check and no 5xx; its report:\n${result.report}\nrunning it once more\n`,
        );
        result = runOnce();
      }
      expect(result.entries.length).toBeGreaterThan(0);
      expect(result.serverErrors).toBe(0);
      expect({ exitCode: result.exitCode, report: result.report.slice(-20_000) }).toEqual({ exitCode: 0, report: '' });
    },
  );
});
