import { existsSync } from 'node:fs';
import path from 'node:path';

/** Folder name of the committed entailment cross-encoder (`libs/text/models/`, trained by `npm run train:nli`). */
export const NLI_MODEL_NAME = 'judge-nli-minilm';

/** Folder name of the committed requirement-satisfaction model (`libs/text/models/`, trained by `npm run train:rsm`). */
export const RSM_MODEL_NAME = 'judge-rsm-minilm';

/**
 * Path of a committed model's folder: `libs/text/models/<name>` of the repository (or of the image,
 * `/app/libs/text/models/…`), found from this file's place when run from the sources (`libs/text/src`) or
 * from the build (`dist/libs/text/src`). @returns the first existing candidate, else the source-relative one
 * (which the loader then reports as missing).
 */
export function committedModelDir(name: string): string {
  const candidates = [path.resolve(__dirname, '../models', name), path.resolve(__dirname, '../../../../libs/text/models', name)];
  return candidates.find((c) => existsSync(path.join(c, 'config.json'))) ?? candidates[0];
}

/** Path of the committed entailment model's folder (see {@link committedModelDir}). */
export function defaultNliModelDir(): string {
  return committedModelDir(NLI_MODEL_NAME);
}

/** Path of the committed requirement-satisfaction model's folder (see {@link committedModelDir}). */
export function defaultRsmModelDir(): string {
  return committedModelDir(RSM_MODEL_NAME);
}
