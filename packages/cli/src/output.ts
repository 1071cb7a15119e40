import { Presets, SingleBar, type Options as BarOptions } from 'cli-progress';
import Table from 'cli-table3';
import { KbApiError, KbTimeoutError } from '@kb-platform/sdk';
import { exitCodeOf, UsageError } from './exit-codes';

/** Options every command takes. */
export interface CommonOptions {
  json?: boolean;
}

/** Prints `value` as one JSON document on stdout (the `--json` contract: one object, exit 0). */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/**
 * Prints records the way every listing and detail command does: with `--json` the API's value as it
 * came (`json`), else a table (`makeTable()`) with one row per record (`rowOf`), then `footer`
 * (a count, a secret shown once…) on the lines after it.
 */
export function printRows<T>(
  opts: CommonOptions,
  json: unknown,
  records: readonly T[],
  makeTable: () => Table.Table,
  rowOf: (record: T) => string[],
  footer = '',
): void {
  if (opts.json) return printJson(json);
  const t = makeTable();
  for (const r of records) t.push(rowOf(r));
  process.stdout.write(`${t.toString()}\n${footer}`);
}

/** Terminal width for tables (120 when not a terminal). */
export function width(): number {
  return process.stdout.columns && process.stdout.columns > 40 ? process.stdout.columns : 120;
}

/**
 * A table with word-wrapped columns sized to the terminal: `fixed` columns keep their width, the
 * `flex` ones share the rest.
 */
export function table(head: string[], sizes: Array<number | 'flex'>): Table.Table {
  const fixed = sizes.reduce<number>((sum, s) => sum + (s === 'flex' ? 0 : s), 0);
  const flexCount = sizes.filter((s) => s === 'flex').length;
  const flex = Math.max(12, Math.floor((width() - fixed - sizes.length - 1) / Math.max(1, flexCount)));
  return new Table({ head, colWidths: sizes.map((s) => (s === 'flex' ? flex : s)), wordWrap: true, wrapOnWordBoundary: true, style: { head: [], border: [] } });
}

/** Shortens `text` to `max` characters (one line, with an ellipsis). */
export function clip(text: string | null | undefined, max: number): string {
  const flat = (text ?? '').replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** `file p.3-4` (or the file alone when the source has no pages). */
export function pages(source: { start_page?: number | null; end_page?: number | null }): string {
  if (source.start_page == null) return '';
  return source.end_page != null && source.end_page !== source.start_page ? `p.${source.start_page}-${source.end_page}` : `p.${source.start_page}`;
}

/**
 * Reports a failure and sets its exit code (exit-codes.ts: 1, or 2 usage, 3 authentication, 4 rate
 * limit or quota): with `--json` `{"error":{code,message,status,request_id}}`
 * on stdout (like kbctl), else one line on stderr with the code, message and request id.
 */
export function fail(error: unknown, json: boolean | undefined): void {
  const e =
    error instanceof KbApiError
      ? { code: error.code, message: error.message, status: error.status, request_id: error.request_id }
      : error instanceof KbTimeoutError
        ? { code: 'TIMEOUT', message: error.message, status: null, request_id: null }
        : error instanceof UsageError
          ? { code: 'USAGE_ERROR', message: error.message, status: null, request_id: null }
          : { code: 'CLIENT_ERROR', message: error instanceof Error ? error.message : String(error), status: null, request_id: null };
  if (json) printJson({ error: e });
  else process.stderr.write(`kb: ${e.code}${e.status ? ` (${e.status})` : ''}: ${e.message}${e.request_id ? ` [request ${e.request_id}]` : ''}\n`);
  process.exitCode = exitCodeOf(error);
}

/** The progress of a wait (see {@link progressBar}). */
export interface WaitProgress {
  /** `done` of `total` items; `payload` fills the format's own tokens. The first report starts the bar. */
  update: (done: number, total: number, payload?: Record<string, unknown>) => void;
  /** Ends the bar (its last line stays); a no-op when none was drawn. */
  stop: () => void;
}

/**
 * A cli-progress bar on stderr for a wait that reports how many of its items are done (a check run's
 * requirements, a batch's questions). Drawn only when `show` (the output is not JSON) and stderr is a
 * terminal; otherwise every call is a no-op.
 * @param format cli-progress's format: `{bar}`, `{value}`, `{total}` and the payload's tokens.
 */
export function progressBar(format: string, show: boolean, options: Partial<BarOptions> = {}): WaitProgress {
  const bar = show && process.stderr.isTTY ? new SingleBar({ format, stream: process.stderr, ...options }, Presets.shades_classic) : null;
  let started = false;
  return {
    update: (done, total, payload) => {
      if (!bar) return;
      if (started) return void bar.update(done, payload);
      started = true;
      bar.start(total, done, payload);
    },
    stop: () => bar?.stop(),
  };
}
