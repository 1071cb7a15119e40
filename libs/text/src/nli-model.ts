import { existsSync } from 'node:fs';
import path from 'node:path';

/** Folder name of the committed entailment cross-encoder (`libs/text/models/`, trained by `npm run train:nli`). */
export const NLI_MODEL_NAME = 'judge-nli-minilm';

/**
 * Path of the committed entailment model's folder: `libs/text/models/judge-nli-minilm` of the repository
 * (or of the image, `/app/libs/text/models/…`), found from this file's place when run from the sources
 * (`libs/text/src`) or from the build (`dist/libs/text/src`). @returns the first existing candidate, else
 * the source-relative one (which the loader then reports as missing).
 */
export function defaultNliModelDir(): string {
  const candidates = [path.resolve(__dirname, '../models', NLI_MODEL_NAME), path.resolve(__dirname, '../../../../libs/text/models', NLI_MODEL_NAME)];
  return candidates.find((c) => existsSync(path.join(c, 'config.json'))) ?? candidates[0];
}
