import { AppError, createLogger } from '@kb/common';
import { parseArgs } from 'node:util';
import { ApiKeyEntity, OrganizationEntity } from '../accounts/account.entities';
import { AccountChange, publishAccountChange } from '../accounts/account-events';
import { AccountsService, openAccountsDatabase } from '../accounts/accounts.service';
import { KbctlContext, kbctlCommands, registerKbctlCommand } from './registry';
// Commands defined in other files register themselves on import: add one line per file here.
import './safety-load';
import './reindex';

/**
 * kbctl: the operator CLI (decisions.md "Operator CLI output"). Works against DATABASE_URL; after a
 * change to a key or an organization it announces the change on NATS (NATS_URL) so every gateway
 * replica drops its cached lookups at once. With --json it prints exactly one JSON object on
 * stdout and exits 0, or prints `{ "error": { "code", "message" } }` and exits 1. Logs go to stderr.
 */
export function usage(): string {
  return ['Usage: kbctl <command> [options] [--json]', ...kbctlCommands().map((c) => `  ${c.usage}`)].join('\n');
}

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

function quotaArg(value: string | boolean | undefined, flag: string): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'unlimited' || value === 'none') return null;
  const n = Number(value);
  if (typeof value !== 'string' || !Number.isInteger(n) || n < 0) throw AppError.validation(`${flag} must be a whole number or 'unlimited'.`);
  return n;
}

/** The value of a required string flag or positional. @throws AppError VALIDATION_ERROR when missing. */
export function required(value: string | boolean | undefined, flag: string): string {
  if (typeof value !== 'string' || !value) throw AppError.validation(`${flag} is required.\n${usage()}`);
  return value;
}

registerKbctlCommand({
  name: 'org create',
  usage: 'org create --name NAME [--safety]',
  options: { name: { type: 'string' }, safety: { type: 'boolean' } },
  run: async ({ values, accounts }) =>
    presentOrganization(await accounts.createOrganization({ name: required(values.name, '--name'), safetyAssistantEnabled: values.safety === true })),
});

registerKbctlCommand({
  name: 'org quota',
  usage: 'org quota --org ORG_ID [--requests N|unlimited] [--tokens N|unlimited]',
  options: { org: { type: 'string' }, requests: { type: 'string' }, tokens: { type: 'string' } },
  run: async ({ values, accounts, announce }) => {
    const org = await accounts.setQuotas(required(values.org, '--org'), {
      requests: quotaArg(values.requests, '--requests'),
      tokens: quotaArg(values.tokens, '--tokens'),
    });
    await announce({ orgId: org.id, reason: 'org.quota' });
    return presentOrganization(org);
  },
});

registerKbctlCommand({
  name: 'org safety',
  usage: 'org safety --org ORG_ID --on|--off',
  options: { org: { type: 'string' }, on: { type: 'boolean' }, off: { type: 'boolean' } },
  run: async ({ values, accounts, announce }) => {
    if ((values.on === true) === (values.off === true)) throw AppError.validation('Give exactly one of --on or --off.');
    const org = await accounts.setSafetyAssistant(required(values.org, '--org'), values.on === true);
    await announce({ orgId: org.id, reason: 'org.safety' });
    return presentOrganization(org);
  },
});

registerKbctlCommand({
  name: 'key create',
  usage: 'key create --org ORG_ID [--name NAME] [--rate-limit N]   (N requests per minute, default 100)',
  options: { org: { type: 'string' }, name: { type: 'string' }, 'rate-limit': { type: 'string' } },
  run: async ({ values, accounts }) => {
    const raw = values['rate-limit'];
    const rate = raw === undefined ? undefined : Number(raw);
    const { key, secret } = await accounts.createApiKey({
      orgId: required(values.org, '--org'),
      name: typeof values.name === 'string' ? values.name : null,
      rateLimitPerMinute: rate,
    });
    const k = presentKey(key);
    return { id: k.id, key: secret, name: k.name, org_id: k.org_id, rate_limit_per_minute: k.rate_limit_per_minute, created_at: k.created_at };
  },
});

registerKbctlCommand({
  name: 'key list',
  usage: 'key list --org ORG_ID',
  options: { org: { type: 'string' } },
  run: async ({ values, accounts }) => ({ keys: (await accounts.listApiKeys(required(values.org, '--org'))).map(presentKey) }),
});

registerKbctlCommand({
  name: 'key revoke',
  usage: 'key revoke KEY_ID',
  run: async ({ args, accounts, announce }) => {
    const key = await accounts.revokeApiKey(required(args[0], 'KEY_ID'));
    await announce({ keyId: key.id, orgId: key.orgId, reason: 'key.revoked' });
    return presentKey(key);
  },
});

/**
 * Runs one kbctl command; returns the JSON object to print.
 * @throws AppError VALIDATION_ERROR for an unknown command or bad flags; whatever the command throws.
 */
export async function runKbctl(
  argv: string[],
  accounts: AccountsService,
  extra: Partial<Pick<KbctlContext, 'env' | 'announce' | 'log'>> = {},
): Promise<Record<string, unknown>> {
  const options: NonNullable<Parameters<typeof parseArgs>[0]>['options'] = { json: { type: 'boolean' } };
  for (const c of kbctlCommands()) Object.assign(options, c.options ?? {});
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options });
  } catch (e) {
    throw AppError.validation(`${(e as Error).message}\n${usage()}`);
  }
  const { values, positionals } = parsed;
  const command = kbctlCommands().find((c) => {
    const words = c.name.split(' ');
    return words.every((w, i) => positionals[i] === w);
  });
  if (!command) throw AppError.validation(`Unknown command.\n${usage()}`);
  return command.run({
    values: values as KbctlContext['values'],
    args: positionals.slice(command.name.split(' ').length),
    accounts,
    env: extra.env ?? process.env,
    announce: extra.announce ?? (async () => undefined),
    log: extra.log ?? ((m) => process.stderr.write(`kbctl: ${m}\n`)),
  });
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const json = argv.includes('--json');
  const url = process.env.DATABASE_URL;
  const log = (m: string) => process.stderr.write(`kbctl: ${m}\n`);
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
  const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
  const announce = async (change: AccountChange) => {
    try {
      await publishAccountChange(natsUrl, change);
    } catch (e) {
      log(`warning: could not notify gateways through NATS (${(e as Error).message}); cached keys expire within GATEWAY_KEY_CACHE_TTL_MS.`);
    }
  };
  try {
    const result = await runKbctl(argv, new AccountsService(db), { announce, log });
    process.stdout.write(json ? JSON.stringify(result) + '\n' : JSON.stringify(result, null, 2) + '\n');
    return 0;
  } catch (e) {
    if (e instanceof AppError) return fail(e.code, e.message);
    createLogger('kbctl').error({ err: e }, 'kbctl failed');
    return fail('INTERNAL_ERROR', (e as Error).message);
  } finally {
    await db.destroy();
  }
}

if (require.main === module) {
  main().then((code) => process.exit(code));
}
