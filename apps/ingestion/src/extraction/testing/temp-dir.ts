/**
 * A scratch folder for one `describe` block of the extraction specs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * Registers a `beforeAll` that makes a fresh folder under the OS temporary folder (named
 * `<prefix>XXXXXX`, as `mkdtempSync` does) and an `afterAll` that removes it with all it holds.
 * Call it inside a `describe` block (or at the top of a spec file).
 *
 * @param prefix the folder name's start, e.g. `'kb-docx-spec-'`.
 * @returns a function giving the absolute path of `name` inside the folder (the folder itself for
 *   no name); it throws when called before the `beforeAll` ran (e.g. while the tests are collected).
 */
export function useTempDir(prefix: string): (name?: string) => string {
  let dir: string | undefined;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), prefix));
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return (name = '') => {
    if (!dir) throw new Error(`useTempDir('${prefix}'): the folder exists only while the tests run (after beforeAll)`);
    return path.join(dir, name);
  };
}
