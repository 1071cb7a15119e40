import { spawn } from 'node:child_process';
import { ExtractionContext } from './context';
import { ExtractionError } from './types';

/** Result of a finished child process. `code` is null when it was killed by a signal. */
export interface ProcessResult {
  stdout: Buffer;
  stderr: string;
  code: number | null;
}

/** Thrown by {@link runProcess} when the executable is not on PATH (spawn ENOENT). */
export class ToolMissingError extends Error {
  constructor(public readonly tool: string) {
    super(`${tool} is not installed or not on PATH`);
    this.name = 'ToolMissingError';
  }
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  /** Largest accepted stdout in bytes (default 512 MiB); beyond it the child is killed and TOO_LARGE thrown. */
  maxOutputBytes?: number;
}

const DEFAULT_MAX_OUTPUT = 512 * 1024 * 1024;
const MAX_STDERR = 64 * 1024;

/**
 * Runs `cmd args...` without a shell and collects its output. Never rejects on a non-zero exit
 * code (callers interpret `code` and `stderr`). Rejects with {@link ToolMissingError} when `cmd`
 * is not installed, with the context's abort reason when the context is aborted (the child is
 * killed with SIGKILL), and with `ExtractionError('TOO_LARGE')` when stdout exceeds the limit.
 */
export function runProcess(ctx: ExtractionContext, cmd: string, args: readonly string[], options: RunOptions = {}): Promise<ProcessResult> {
  if (ctx.signal.aborted) return Promise.reject(ctx.signal.reason);
  const maxOutput = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  return new Promise<ProcessResult>((resolve, reject) => {
    const child = spawn(cmd, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: options.env ?? process.env,
      signal: ctx.signal,
      killSignal: 'SIGKILL',
    });
    const out: Buffer[] = [];
    let outBytes = 0;
    let stderr = '';
    let failure: Error | null = null;
    child.stdout.on('data', (d: Buffer) => {
      outBytes += d.length;
      if (outBytes > maxOutput) {
        if (!failure) {
          failure = new ExtractionError('TOO_LARGE', 'The document produces more text than the service accepts; split it into smaller files.');
          child.kill('SIGKILL');
        }
        return;
      }
      out.push(d);
    });
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < MAX_STDERR) stderr += d.toString('utf8');
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') failure = failure ?? new ToolMissingError(cmd);
      else if (ctx.signal.aborted) failure = failure ?? (ctx.signal.reason as Error);
      else failure = failure ?? err;
    });
    child.on('close', (code) => {
      if (ctx.signal.aborted) return reject(ctx.signal.reason);
      if (failure) return reject(failure);
      resolve({ stdout: Buffer.concat(out), stderr, code });
    });
  });
}
