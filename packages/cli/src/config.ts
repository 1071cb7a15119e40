import { KbClient } from '@kb-platform/sdk';

/** Connection options every command takes (default: KB_BASE_URL, KB_API_KEY). */
export interface ConnectionOptions {
  baseUrl?: string;
  apiKey?: string;
}

/**
 * The SDK client for a command: `--base-url`/`--api-key`, else KB_BASE_URL / KB_API_KEY.
 * @throws Error naming the variable when no API key is configured.
 */
export function client(options: ConnectionOptions): KbClient {
  const apiKey = options.apiKey ?? process.env.KB_API_KEY;
  if (!apiKey) throw new Error('No API key: set KB_API_KEY (or pass --api-key). Operators create keys with `kbctl key create`.');
  return new KbClient({ baseUrl: options.baseUrl ?? process.env.KB_BASE_URL, apiKey });
}
