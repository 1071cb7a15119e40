import { AppError } from '@kb/common';
import { parseArgs } from 'node:util';
import { ApiKeyEntity, OrganizationEntity } from '../accounts/account.entities';
import { AccountsService, openAccountsDatabase } from '../accounts/accounts.service';

/**
 * kbctl: the operator CLI (decisions.md "Operator CLI output"). Works against DATABASE_URL.
 * With --json it prints exactly one JSON object on stdout and exits 0, or prints
 * `{ "error": { "code", "message" } }` and exits 1. Logs go to stderr.
 */
const USAGE = `Usage: kbctl <command> [options] [--json]
  org create --name NAME [--safety]
  org quota --org ORG_ID [--requests N|unlimited] [--tokens N|unlimited]
  org safety --org ORG_ID --on|--off
  key create --org ORG_ID [--name NAME] [--rate-limit N]
  key list --org ORG_ID
  key revoke KEY_ID`;

export function presentOrganization(o: OrganizationEntity) {
  return {
    id: o.id,
    name: o.name,
    safety_assistant_enabled: o.safetyAssistantEnabled,
    monthly_request_quota: o.monthlyRequestQuota,
    monthly_token_quota: o.monthlyTokenQuota,
    created_at: o.createdAt.toISOString(),
  };
}

function presentKey(k: ApiKeyEntity) {
  return {
    id: k.id,
    name: k.name,
    org_id: k.orgId,
    key_prefix: k.keyPrefix,
    rate_limit_per_minute: k.rateLimitPerMinute,
    created_at: k.createdAt.toISOString(),
    revoked_at: k.revokedAt ? k.revokedAt.toISOString() : null,
  };
}

function quotaArg(value: string | undefined, flag: string): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'unlimited' || value === 'none') return null;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw AppError.validation(`${flag} must be a whole number or 'unlimited'.`);
  return n;
}

function required(value: string | undefined, flag: string): string {
  if (!value) throw AppError.validation(`${flag} is required.\n${USAGE}`);
  return value;
}

/** Runs one kbctl command; returns the JSON object to print. */
export async function runKbctl(argv: string[], accounts: AccountsService): Promise<Record<string, unknown>> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      org: { type: 'string' },
      safety: { type: 'boolean' },
      requests: { type: 'string' },
      tokens: { type: 'string' },
      on: { type: 'boolean' },
      off: { type: 'boolean' },
      'rate-limit': { type: 'string' },
      json: { type: 'boolean' },
    },
  });
  const [group, command, arg] = positionals;
  switch (`${group ?? ''} ${command ?? ''}`) {
    case 'org create':
      return presentOrganization(await accounts.createOrganization({ name: required(values.name, '--name'), safetyAssistantEnabled: values.safety ?? false }));
    case 'org quota':
      return presentOrganization(
        await accounts.setQuotas(required(values.org, '--org'), {
          requests: quotaArg(values.requests, '--requests'),
          tokens: quotaArg(values.tokens, '--tokens'),
        }),
      );
    case 'org safety': {
      if (values.on === values.off) throw AppError.validation('Give exactly one of --on or --off.');
      return presentOrganization(await accounts.setSafetyAssistant(required(values.org, '--org'), values.on === true));
    }
    case 'key create': {
      const rate = values['rate-limit'] === undefined ? undefined : Number(values['rate-limit']);
      const { key, secret } = await accounts.createApiKey({ orgId: required(values.org, '--org'), name: values.name ?? null, rateLimitPerMinute: rate });
      const { key_prefix: _prefix, revoked_at: _revoked, ...rest } = presentKey(key);
      return { id: rest.id, key: secret, name: rest.name, org_id: rest.org_id, rate_limit_per_minute: rest.rate_limit_per_minute, created_at: rest.created_at };
    }
    case 'key list':
      return { keys: (await accounts.listApiKeys(required(values.org, '--org'))).map(presentKey) };
    case 'reindex ': return (await import('./reindex')).runReindex(); // re-embed every document (apps/gateway/src/cli/reindex.ts)
    case 'key revoke':
      return presentKey(await accounts.revokeApiKey(required(arg, 'KEY_ID')));
    default:
      throw AppError.validation(`Unknown command.\n${USAGE}`);
  }
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const json = argv.includes('--json');
  const url = process.env.DATABASE_URL;
  const fail = (code: string, message: string) => {
    if (json) process.stdout.write(JSON.stringify({ error: { code, message } }) + '\n');
    else process.stderr.write(`kbctl: ${message}\n`);
    return 1;
  };
  if (!url) return fail('CONFIGURATION_ERROR', 'DATABASE_URL is not set and no local stack is running (start it with `npm start`).');
  let db;
  try {
    db = await openAccountsDatabase(url);
  } catch (e) {
    return fail('SERVICE_UNAVAILABLE', `Cannot reach the database: ${(e as Error).message}`);
  }
  try {
    const result = await runKbctl(argv, new AccountsService(db));
    process.stdout.write(json ? JSON.stringify(result) + '\n' : JSON.stringify(result, null, 2) + '\n');
    return 0;
  } catch (e) {
    if (e instanceof AppError) return fail(e.code, e.message);
    return fail('INTERNAL_ERROR', (e as Error).message);
  } finally {
    await db.destroy();
  }
}

if (require.main === module) {
  main().then((code) => process.exit(code));
}
