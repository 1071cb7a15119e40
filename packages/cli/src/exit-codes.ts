import { CommanderError } from 'commander';
import { KbAuthenticationError, KbQuotaExceededError, KbRateLimitError } from '@kb-platform/sdk';

/**
 * The exit codes of `kb` (README "Exit codes"), the one place they are decided:
 * - 0 success;
 * - 1 any other error (the service refused the call, could not be reached, a file failed, a run
 *   ended `failed`/`stopped`…);
 * - 2 usage: a bad command line (unknown option or command, missing argument, a value that is not
 *   one of the choices, a profile that does not exist);
 * - 3 authentication: no API key configured, or the service answered 401 (invalid or revoked key);
 * - 4 rate limit or quota: 429 (after the SDK's retries) or 402 (the monthly quota is spent);
 * - 5 requirements failed: `kb check` / `kb verify` / `kb runs wait` with `--fail-on`, see gate.ts.
 */
export const ExitCode = {
  OK: 0,
  ERROR: 1,
  USAGE: 2,
  AUTHENTICATION: 3,
  LIMITED: 4,
  REQUIREMENTS_FAILED: 5,
} as const;

/** A command line `kb` cannot act on (exit 2), found after the parser accepted it. */
export class UsageError extends Error {
  override readonly name: string = 'UsageError';
}

/** No API key for the command: neither `--api-key`, `KB_API_KEY` nor a profile (exit 3). */
export class MissingCredentialsError extends Error {
  override readonly name: string = 'MissingCredentialsError';
}

/** The exit code of an error (see {@link ExitCode}); commander's own help/version exits keep their 0. */
export function exitCodeOf(error: unknown): number {
  if (error instanceof CommanderError) return error.exitCode === 0 ? ExitCode.OK : ExitCode.USAGE;
  if (error instanceof UsageError) return ExitCode.USAGE;
  if (error instanceof KbAuthenticationError || error instanceof MissingCredentialsError) return ExitCode.AUTHENTICATION;
  if (error instanceof KbQuotaExceededError || error instanceof KbRateLimitError) return ExitCode.LIMITED;
  return ExitCode.ERROR;
}
