import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { KbClient } from '@kb-platform/sdk';
import { MissingCredentialsError, UsageError } from './exit-codes';

/** Connection options every command takes: `--base-url`, `--api-key`, `--profile`. */
export interface ConnectionOptions {
  baseUrl?: string;
  apiKey?: string;
  profile?: string;
}

/** The address used when neither a flag, `KB_BASE_URL` nor a profile gives one (the SDK's own default). */
export const DEFAULT_BASE_URL = 'http://localhost:8080';

/** The profile used when neither `--profile` nor `KB_PROFILE` names one. */
export const DEFAULT_PROFILE = 'default';

/** One saved profile: `kb login` writes it. */
export interface Profile {
  base_url: string;
  api_key: string;
}

/** The config file: `{ "profiles": { "<name>": { "base_url", "api_key" } } }`. */
export interface ConfigFile {
  profiles: Record<string, Profile>;
}

/**
 * Path of the config file, by the XDG Base Directory rule: `$XDG_CONFIG_HOME/kb/config.json` when
 * XDG_CONFIG_HOME is set (and absolute), else `%APPDATA%\kb\config.json` on Windows, else
 * `~/.config/kb/config.json` (macOS included, as gh and git do).
 */
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CONFIG_HOME;
  if (xdg && path.isAbsolute(xdg)) return path.join(xdg, 'kb', 'config.json');
  if (process.platform === 'win32' && env.APPDATA) return path.join(env.APPDATA, 'kb', 'config.json');
  return path.join(os.homedir(), '.config', 'kb', 'config.json');
}

/**
 * The config file's contents (`{ profiles: {} }` when there is none).
 * @throws Error naming the file when it is not the expected JSON.
 */
export function readConfig(file = configPath()): ConfigFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { profiles: {} };
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const profiles = (parsed as { profiles?: unknown } | undefined)?.profiles;
  if (!profiles || typeof profiles !== 'object' || Array.isArray(profiles)) {
    throw new Error(`${file} is not a kb config file (expected {"profiles": {"<name>": {"base_url", "api_key"}}}); fix or delete it.`);
  }
  return { profiles: profiles as Record<string, Profile> };
}

/**
 * Writes the config file readable by its owner only: the folder is created with mode 0700 (and set
 * to it), the file written to a temporary file of mode 0600 in the same folder, then renamed over
 * the old one (a reader never sees half a file).
 */
export function writeConfig(config: ConfigFile, file = configPath()): void {
  const dir = path.dirname(file);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, file);
}

/** A profile name: letters, digits, `.`, `_`, `-` (1 to 64). */
export function checkProfileName(name: string): string {
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(name)) throw new UsageError(`not a profile name: ${JSON.stringify(name)} (letters, digits, ".", "_", "-"; at most 64)`);
  return name;
}

/** The connection a command uses, and where each part came from (for `kb login` and error messages). */
export interface Resolved {
  baseUrl: string;
  apiKey: string | undefined;
  /** The profile read, or null when none was (no config file, or the default profile does not exist). */
  profile: string | null;
}

/** An environment variable, empty counting as unset. */
const env = (name: string): string | undefined => process.env[name] || undefined;

/**
 * The base URL and API key of a command, each by this precedence: the flag (`--base-url`,
 * `--api-key`), then the environment (`KB_BASE_URL`, `KB_API_KEY`), then the profile named by
 * `--profile` or `KB_PROFILE`, else the profile `default` when it exists, then the default address
 * (no default key).
 * @throws UsageError when `--profile`/`KB_PROFILE` names a profile the config file does not have.
 */
export function resolveConnection(options: ConnectionOptions): Resolved {
  const named = options.profile ?? env('KB_PROFILE');
  let profile: Profile | undefined;
  let profileName: string | null = null;
  // The file is read only when it can matter (a value is still missing, or a profile is named).
  if (named || !(options.baseUrl ?? env('KB_BASE_URL')) || !(options.apiKey ?? env('KB_API_KEY'))) {
    const file = configPath();
    const { profiles } = readConfig(file);
    const name = named ?? DEFAULT_PROFILE;
    profile = Object.hasOwn(profiles, name) ? profiles[name] : undefined;
    if (named && !profile) throw new UsageError(`no profile "${named}" in ${file}: create it with \`kb login --profile ${named}\``);
    if (profile) profileName = name;
  }
  return {
    baseUrl: options.baseUrl ?? env('KB_BASE_URL') ?? profile?.base_url ?? DEFAULT_BASE_URL,
    apiKey: options.apiKey ?? env('KB_API_KEY') ?? profile?.api_key,
    profile: profileName,
  };
}

/**
 * The SDK client for a command, connected as {@link resolveConnection} says.
 * @throws MissingCredentialsError (exit 3) when no API key is configured anywhere.
 * @throws UsageError (exit 2) for an unknown `--profile`.
 */
export function client(options: ConnectionOptions): KbClient {
  const { baseUrl, apiKey } = resolveConnection(options);
  if (!apiKey) {
    throw new MissingCredentialsError(
      'No API key: run `kb login` (saves a profile), or set KB_API_KEY (or pass --api-key). Operators create keys with `kbctl key create`.',
    );
  }
  return new KbClient({ baseUrl, apiKey });
}
