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

/** Every registered command, in registration order. */
export function kbctlCommands(): KbctlCommand[] {
  return [...commands.values()];
}
