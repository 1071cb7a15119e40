import { AppError } from '@kb/common';
import type { ParseArgsConfig } from 'node:util';
import type { AccountsService } from '../accounts/accounts.service';
import type { AccountChange } from '../accounts/account-events';

/** What a kbctl command receives. */
export interface KbctlContext {
  /** Parsed `--flags` (the union of every command's options; strings and booleans). */
  values: Record<string, string | boolean | undefined>;
  /** Positional arguments after the command words (e.g. `KEY_ID` of `key revoke KEY_ID`). */
  args: string[];
  /** Organizations and API keys in the gateway schema of DATABASE_URL. */
  accounts: AccountsService;
  /** The process environment (DATABASE_URL, NATS_URL, service addresses…). */
  env: NodeJS.ProcessEnv;
  /** Tells every gateway replica to drop cached keys of a changed key/org (best effort, warns on stderr). */
  announce: (change: AccountChange) => Promise<void>;
  /** Log line on stderr (stdout carries only the result). */
  log: (message: string) => void;
}

/**
 * One operator command, e.g. `{ name: 'org create', usage: 'org create --name NAME', ... }`.
 * `run` returns the JSON object printed on stdout (decisions.md "Operator CLI output") or throws
 * an AppError (printed as `{ error: { code, message } }`, exit code 1).
 */
export interface KbctlCommand {
  /** Command words, space-separated: `group verb`. */
  name: string;
  /** One usage line shown in help. */
  usage: string;
  /** What the command does, its flags and its output: shown by `kbctl <command> --help`. */
  help?: string;
  /** Extra `--flags` this command accepts (node:util parseArgs option config). */
  options?: NonNullable<ParseArgsConfig['options']>;
  run: (ctx: KbctlContext) => Promise<Record<string, unknown>>;
}

const commands = new Map<string, KbctlCommand>();

/**
 * Registers a kbctl command. Commands living in other files call this at module load; kbctl.ts
 * imports those files (one `import './<file>';` line each).
 * @throws Error when the name is already taken (a programming error).
 */
export function registerKbctlCommand(command: KbctlCommand): void {
  if (commands.has(command.name)) throw new Error(`kbctl command "${command.name}" registered twice`);
  commands.set(command.name, command);
}

/** Largest value of a PostgreSQL `integer` column (`api_keys.rate_limit_per_minute`): 2^31 − 1. */
export const PG_INTEGER_MAX = 2_147_483_647;
/** Largest `bigint` column value (quotas) kbctl accepts: JavaScript's exact-integer limit, 2^53 − 1 (below PostgreSQL's 2^63 − 1). */
export const PG_BIGINT_SAFE_MAX = Number.MAX_SAFE_INTEGER;

/**
 * A whole-number flag value within [min, max] (the range of the column it is stored in): only
 * plain decimal digits (`"1e3"`, `"0x10"`, `"-1"`, `" 5"`, `""` are refused, not read loosely).
 * @returns the number.
 * @throws AppError VALIDATION_ERROR naming the flag and the range.
 */
export function wholeNumberOption(value: string | boolean | undefined, flag: string, min: number, max: number): number {
  const n = typeof value === 'string' && /^[0-9]{1,20}$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw AppError.validation(`${flag} must be a whole number from ${min} to ${max}.`);
  return n;
}

/** Every registered command, in registration order. */
export function kbctlCommands(): KbctlCommand[] {
  return [...commands.values()];
}
