// Small measuring helpers shared by the benchmarks (tools/bench).
import { execFileSync } from 'node:child_process';

/**
 * The p-th percentile of `values` by the nearest-rank method (the smallest value with at least
 * p% of the values at or below it; NIST/Wikipedia "Percentile", nearest-rank definition).
 * @param {number[]} values samples (not modified)
 * @param {number} p percentile, 0 < p <= 100
 * @returns {number} one of the samples (undefined for an empty list)
 */
export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1))];
}

/**
 * Runs `fn` and measures its wall time.
 * @template T
 * @param {() => Promise<T> | T} fn
 * @returns {Promise<[number, T]>} milliseconds, then the result
 */
export async function timed(fn) {
  const start = process.hrtime.bigint();
  const result = await fn();
  return [Number(process.hrtime.bigint() - start) / 1e6, result];
}

/**
 * Number of pages of a PDF, read with poppler's `pdfinfo`.
 * @param {string} file path of the PDF
 * @returns {number}
 * @throws when pdfinfo fails or prints no page count
 */
export function pdfPages(file) {
  return Number(/Pages:\s+(\d+)/.exec(execFileSync('pdfinfo', [file], { encoding: 'utf8' }))[1]);
}

/**
 * Runs `fn` over `items`, at most `limit` calls at once, each worker taking the next item when it
 * finishes one (a work queue, so slow items do not hold back the others).
 * @template T, R
 * @param {T[]} items
 * @param {number} limit concurrent calls (values below 1 count as 1)
 * @param {(item: T, index: number) => Promise<R>} fn
 * @returns {Promise<R[]>} the results in the order of `items`, once every call resolved; rejects with the first error
 */
export async function pool(items, limit, fn) {
  const out = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(Math.max(1, limit), items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i], i);
      }
    }),
  );
  return out;
}
