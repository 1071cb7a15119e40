import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { ROOT, stopChild } from './harness';

/** The model id the test server serves (and the stack's `LLM_MODEL`). */
export const REAL_MODEL_NAME = 'SmolLM2-135M-Instruct';

/** A running tools/llm-server process. */
export interface RealModelServer {
  /** OpenAI base URL ending in `/v1`, for `LLM_BASE_URL`. */
  baseUrl: string;
  model: string;
  process: ChildProcess;
  /** SIGTERM, then waits until the process has exited. */
  stop(): Promise<void>;
}

/**
 * Why the real-model tests cannot run here, or null when they can: the global setup (or `npm test`)
 * put the cached GGUF in `KB_LLM_GGUF` (tools/lib/llm-server.mjs), or the registry could not be
 * reached (`KB_LLM_SKIP_REASON`).
 */
export function realModelUnavailable(): string | null {
  if (process.env.KB_LLM_GGUF) return null;
  return process.env.KB_LLM_SKIP_REASON ?? 'KB_LLM_GGUF is not set (run the e2e suite through `npm test` or its global setup)';
}

/**
 * Starts tools/llm-server/server.mjs (node-llama-cpp, CPU) on the GGUF of `KB_LLM_GGUF`, on a free
 * loopback port, and waits for its READY line (the model is loaded by then).
 * @throws Error when the server exits before it is ready
 */
export async function startRealModelServer(): Promise<RealModelServer> {
  const child = spawn(
    process.execPath,
    [path.join(ROOT, 'tools/llm-server/server.mjs'), '--model', process.env.KB_LLM_GGUF!, '--name', REAL_MODEL_NAME, '--port', '0'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const ready = await new Promise<{ baseUrl: string; model: string }>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('READY '));
      if (line) resolve(JSON.parse(line.slice(6)));
    });
    child.once('exit', (code, signal) => reject(new Error(`tools/llm-server exited with ${code ?? signal} before it was ready`)));
  });
  return {
    ...ready,
    process: child,
    stop: () => stopChild(child),
  };
}
