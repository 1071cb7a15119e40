import { AppError } from '@kb/common';
import { parseArgs } from 'node:util';
import { ApiKeyEntity, OrganizationEntity } from '../accounts/account.entities';
import { AccountChange, publishAccountChange } from '../accounts/account-events';
import { AccountsRepository } from '../accounts/accounts.repository';
import { AccountsService, orgSettings } from '../accounts/accounts.service';
import { openGatewayDatabase } from '../database/database';
import { KbctlContext, kbctlCommands, PG_BIGINT_SAFE_MAX, PG_INTEGER_MAX, registerKbctlCommand, wholeNumberOption } from './registry';
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

const GLOBAL_HELP_TAIL = [
  '',
  'Every command:',
  '  --json     print exactly one JSON object on stdout (exit 0), or {"error":{"code","message"}} (exit 1)',
  '  --help     this help; `kbctl <command> --help` (or `kbctl help <command>`) for one command',
  '',
  "Environment: DATABASE_URL (required; `npm run kbctl` reads the local stack's from .data/stack.json),",
  'NATS_URL (changes to keys and organizations are announced to every gateway), DOCUMENTS_GRPC_URL',
  '(safety load), RETRIEVAL_GRPC_URL (reindex).',
];

/**
 * The help `argv` asks for, or null when it asks for none. Help is asked by `--help`, `-h`, a first
 * word `help`, or no command at all. `kbctl org create --help` gives that command's usage and
 * description; `kbctl org --help` the commands of the group; anything else the global help.
 * Needs no database. With `--json` the help is one JSON object: `{ help, commands: [{ name, usage, help }] }`.
 */
export function helpFor(argv: string[]): { text: string; json: Record<string, unknown> } | null {
  const flags = argv.filter((a) => a.startsWith('-'));
  const words = argv.filter((a) => !a.startsWith('-'));
  const asked = flags.includes('--help') || flags.includes('-h') || words[0] === 'help' || words.length === 0;
  if (!asked) return null;
  const wanted = words[0] === 'help' ? words.slice(1) : words;
  // Organizations and keys first, then the corpus and index commands (registration order is import order).
  const groups = ['org', 'key', 'safety', 'reindex'];
  const rank = (name: string) => (groups.indexOf(name.split(' ')[0]) + groups.length + 1) % (groups.length + 1);
  const all = kbctlCommands()
    .map((c, i) => ({ c, i }))
    .sort((a, b) => rank(a.c.name) - rank(b.c.name) || a.i - b.i)
    .map(({ c }) => c);
  const exact = all.find((c) => c.name.split(' ').every((w, i) => wanted[i] === w));
  const group = exact ? [exact] : all.filter((c) => wanted.length > 0 && c.name.split(' ')[0] === wanted[0]);
  const shown = group.length > 0 ? group : all;
  const describe = (c: (typeof all)[number]) => ({ name: c.name, usage: `kbctl ${c.usage}`, help: c.help ?? '' });
  let text: string;
  if (exact) {
    text = [`Usage: kbctl ${exact.usage} [--json]`, '', ...(exact.help ? [exact.help] : []), ...GLOBAL_HELP_TAIL].join('\n');
  } else {
    text = [
      'kbctl: the operator CLI (organizations, API keys, the shared safety corpus, reindexing).',
      'Usage: kbctl <command> [options] [--json]',
      '',
      'Commands:',
      ...shown.map((c) => `  ${c.usage}`),
      ...GLOBAL_HELP_TAIL,
    ].join('\n');
  }
  return { text, json: { help: text, commands: shown.map(describe) } };
}

/** An organization as kbctl prints it: id, its settings (orgSettings) and created_at (ISO 8601). */
export function presentOrganization(o: OrganizationEntity) {
  return { id: o.id, ...orgSettings(o), created_at: o.createdAt.toISOString() };
}

/**
 * The output of a command that changed an organization's settings: announces the change on NATS
 * first (every gateway drops its cached keys of the organization), then prints the organization.
 */
async function announcedOrganization(org: OrganizationEntity, reason: AccountChange['reason'], announce: KbctlContext['announce']) {
  await announce({ orgId: org.id, reason });
  return presentOrganization(org);
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
  const n = typeof value === 'string' && /^[0-9]{1,20}$/.test(value) ? Number(value) : NaN;
  // The quota columns are bigint; beyond 2^53 − 1 a JavaScript number is no longer exact.
  if (!Number.isSafeInteger(n) || n > PG_BIGINT_SAFE_MAX)
    throw AppError.validation(`${flag} must be a whole number from 0 to ${PG_BIGINT_SAFE_MAX}, or 'unlimited'.`);
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
  help: 'Creates an organization and prints it (id, name, safety_assistant_enabled, quotas, created_at).\n  --name NAME   1 to 200 characters\n  --safety      turn the construction-safety assistant on from the start',
  options: { name: { type: 'string' }, safety: { type: 'boolean' } },
  run: async ({ values, accounts }) =>
    presentOrganization(await accounts.createOrganization({ name: required(values.name, '--name'), safetyAssistantEnabled: values.safety === true })),
});

registerKbctlCommand({
  name: 'org list',
  usage: 'org list',
  help: 'Lists every organization, oldest first: { organizations: [{ id, name, safety_assistant_enabled, monthly_request_quota, monthly_token_quota, created_at, active_keys }] }.',
  run: async ({ accounts }) => ({
    organizations: (await accounts.listOrganizations()).map(({ organization, activeKeys }) => ({
      ...presentOrganization(organization),
      active_keys: activeKeys,
    })),
  }),
});

registerKbctlCommand({
  name: 'org quota',
  usage: 'org quota --org ORG_ID [--requests N|unlimited] [--tokens N|unlimited]',
  help: "Sets the organization's monthly caps (402 QUOTA_EXCEEDED beyond them); prints the organization.\n  --requests N|unlimited   API requests per calendar month (UTC)\n  --tokens N|unlimited     model tokens per calendar month",
  options: { org: { type: 'string' }, requests: { type: 'string' }, tokens: { type: 'string' } },
  run: async ({ values, accounts, announce }) => {
    const org = await accounts.setQuotas(required(values.org, '--org'), {
      requests: quotaArg(values.requests, '--requests'),
      tokens: quotaArg(values.tokens, '--tokens'),
    });
    return announcedOrganization(org, 'org.quota', announce);
  },
});

registerKbctlCommand({
  name: 'org safety',
  usage: 'org safety --org ORG_ID --on|--off',
  help: 'Turns the construction-safety assistant on or off for an organization; prints the organization.',
  options: { org: { type: 'string' }, on: { type: 'boolean' }, off: { type: 'boolean' } },
  run: async ({ values, accounts, announce }) => {
    if ((values.on === true) === (values.off === true)) throw AppError.validation('Give exactly one of --on or --off.');
    return announcedOrganization(await accounts.setSafetyAssistant(required(values.org, '--org'), values.on === true), 'org.safety', announce);
  },
});

registerKbctlCommand({
  name: 'key create',
  usage: 'key create --org ORG_ID [--name NAME] [--rate-limit N]   (N requests per minute, default 100)',
  help: 'Creates an API key for an organization and prints it once (`key`: kb_ + 32 random bytes); only its\nSHA-256 hash is stored.\n  --name NAME        a label for the key\n  --rate-limit N     requests per minute for this key (default 100)',
  options: { org: { type: 'string' }, name: { type: 'string' }, 'rate-limit': { type: 'string' } },
  run: async ({ values, accounts }) => {
    const raw = values['rate-limit'];
    // api_keys.rate_limit_per_minute is a PostgreSQL integer: 1 to 2^31 − 1.
    const rate = raw === undefined ? undefined : wholeNumberOption(raw, '--rate-limit', 1, PG_INTEGER_MAX);
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
  help: "Lists the organization's keys, newest first (id, name, key_prefix, rate limit, created_at, revoked_at); never the secrets.",
  options: { org: { type: 'string' } },
  run: async ({ values, accounts }) => ({ keys: (await accounts.listApiKeys(required(values.org, '--org'))).map(presentKey) }),
});

registerKbctlCommand({
  name: 'key revoke',
  usage: 'key revoke KEY_ID',
  help: 'Revokes a key: every gateway refuses it at once (announced on NATS). Prints the revoked key.',
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
  const help = helpFor(argv);
  if (help) {
    process.stdout.write(json ? JSON.stringify(help.json) + '\n' : help.text + '\n');
    return 0;
  }
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
    db = await openGatewayDatabase(url);
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
    const result = await runKbctl(argv, new AccountsService(new AccountsRepository(db)), { announce, log });
    process.stdout.write(json ? JSON.stringify(result) + '\n' : JSON.stringify(result, null, 2) + '\n');
    return 0;
  } catch (e) {
    if (e instanceof AppError) return fail(e.code, e.message);
    // The details (SQL, stack) go to stderr; stdout carries only the one result line.
    log(`unexpected error: ${(e as Error).stack ?? String(e)}`);
    return fail('INTERNAL_ERROR', 'kbctl failed unexpectedly; the details are on stderr.');
  } finally {
    await db.destroy();
  }
}

if (require.main === module) {
  void main().then((code) => process.exit(code));
}
