/**
 * Test helpers: where the shared corpus of real documents lives (`../shared/corpus` next to the
 * repository root, overridable with KB_CORPUS_DIR) and small utilities the specs share.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

/** Repository root (the folder holding package.json). */
export const REPO_ROOT = path.resolve(__dirname, '../../../../..');

/** The shared corpus folder. */
export const CORPUS_DIR = process.env.KB_CORPUS_DIR ?? path.resolve(REPO_ROOT, '../shared/corpus');

/** Absolute path of a corpus file, e.g. `corpus('pdf/OSHA2001.pdf')`; throws when it is missing. */
export function corpus(relative: string): string {
  const p = path.join(CORPUS_DIR, relative);
  if (!existsSync(p)) throw new Error(`corpus file missing: ${p} (set KB_CORPUS_DIR to the shared corpus folder)`);
  return p;
}

/** Full path of an executable found on PATH, or null. */
export function whichTool(tool: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, tool))) return path.join(dir, tool);
  }
  return null;
}

/** Whether an executable is on PATH. */
export function hasTool(tool: string): boolean {
  return whichTool(tool) !== null;
}

/** Text of one PDF page as poppler prints it (`pdftotext -f N -l N`). */
export function pdfPageText(file: string, page: number): string {
  return execFileSync('pdftotext', ['-enc', 'UTF-8', '-f', String(page), '-l', String(page), file, '-']).toString('utf8');
}

/** Lowercase word multiset of a text. */
export function words(text: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const w of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) m.set(w, (m.get(w) ?? 0) + 1);
  return m;
}

/** Share of the reference's words (with multiplicity) found in the candidate text, 0..1. */
export function wordOverlap(reference: string, candidate: string): number {
  const ref = words(reference);
  const got = words(candidate);
  let total = 0;
  let hit = 0;
  for (const [w, n] of ref) {
    total += n;
    hit += Math.min(n, got.get(w) ?? 0);
  }
  return total === 0 ? 0 : hit / total;
}
