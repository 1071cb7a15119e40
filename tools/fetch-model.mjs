#!/usr/bin/env node
// `node tools/fetch-model.mjs [--dir DIR] [--model ID] [--dtype q8|fp32] [--probe-timeout-ms N]`:
// puts a transformers.js embedding model into a models directory, in the layout the local
// embedding provider reads (`<dir>/<org>/<name>/{config.json, tokenizer.json,
// tokenizer_config.json, onnx/model_quantized.onnx}`).
//
// - Already there (tokenizer and weights present): nothing is fetched ("present").
// - Else, when the model hub answers (`HF_ENDPOINT`, default https://huggingface.co, the variable
//   the Hugging Face tools use for mirrors): transformers.js' own download path fetches the files
//   (`env.allowRemoteModels`, its file-system cache pointed at a staging folder beside DIR, so the
//   files land in the local layout), the model is loaded once from there to prove the copy works,
//   and only then is its folder moved into DIR ("fetched"). A failed download removes the staging
//   folder: DIR never holds a partial model, even while the library's other downloads still run.
// - Else ("unreachable", exit 3): nothing is written; the services start lexical-only and say so.
// Defaults: --dir KB_MODELS_DIR or .data/models, --model EMBEDDINGS_MODEL or Xenova/all-MiniLM-L6-v2,
// --dtype EMBEDDINGS_DTYPE or q8. Prints one JSON line on stdout: {status, model, dir, reason?}.
// Exit codes: 0 present or fetched, 3 hub unreachable, 1 any other failure (reason printed).
// Used by `npm start` (tools/start.mjs) and by the Dockerfile's model stage.
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);

/** The default model of the local provider (libs/models/src/embeddings/config.ts DEFAULT_LOCAL_EMBEDDING_MODEL). */
export const DEFAULT_MODEL = 'Xenova/all-MiniLM-L6-v2';

/** Files the local provider needs, relative to the model's folder. */
export function requiredFiles(dtype = 'q8') {
  return ['config.json', 'tokenizer.json', 'tokenizer_config.json', `onnx/${dtype === 'q8' ? 'model_quantized' : 'model'}.onnx`];
}

/** True when every file the local provider needs is in `<dir>/<model>/`. */
export function modelPresent(dir, model, dtype = 'q8') {
  return requiredFiles(dtype).every((f) => existsSync(path.join(dir, model, f)));
}

/** Base URL of the model hub: `HF_ENDPOINT` (mirrors), else the Hugging Face hub. Always ends with `/`. */
export function hubEndpoint(env = process.env) {
  const base = env.HF_ENDPOINT && env.HF_ENDPOINT.trim() !== '' ? env.HF_ENDPOINT.trim() : 'https://huggingface.co';
  return base.endsWith('/') ? base : `${base}/`;
}

/**
 * Ensures the model is in `dir` (see the file comment).
 * @returns {Promise<{status: 'present'|'fetched'|'unreachable'|'failed', model: string, dir: string, reason?: string}>}
 */
export async function fetchModel({ dir, model = DEFAULT_MODEL, dtype = 'q8', probeTimeoutMs = 10_000, env = process.env }) {
  const abs = path.resolve(dir);
  if (modelPresent(abs, model, dtype)) return { status: 'present', model, dir: abs };
  const endpoint = hubEndpoint(env);
  const probeUrl = `${endpoint}${model}/resolve/main/config.json`;
  try {
    const res = await fetch(probeUrl, { method: 'HEAD', redirect: 'follow', signal: AbortSignal.timeout(probeTimeoutMs) });
    if (res.status === 404 || res.status === 401) {
      return { status: 'failed', model, dir: abs, reason: `the model hub has no model ${model} (${probeUrl}: HTTP ${res.status})` };
    }
    if (!res.ok) return { status: 'unreachable', model, dir: abs, reason: `${probeUrl}: HTTP ${res.status}` };
  } catch (error) {
    const cause = error?.cause?.code ?? error?.cause?.message ?? error?.message ?? String(error);
    return {
      status: 'unreachable',
      model,
      dir: abs,
      reason: `${endpoint} cannot be reached (${error?.name === 'TimeoutError' ? `no answer in ${probeTimeoutMs} ms` : cause})`,
    };
  }
  // Staging beside DIR (same file system, so the final move is a rename).
  mkdirSync(path.dirname(abs), { recursive: true });
  const staging = mkdtempSync(`${abs}.partial-`);
  const hf = require(require.resolve('@huggingface/transformers', { paths: [ROOT] }));
  hf.env.allowRemoteModels = true;
  hf.env.allowLocalModels = true;
  hf.env.remoteHost = endpoint;
  hf.env.localModelPath = staging + path.sep;
  hf.env.cacheDir = staging + path.sep;
  hf.env.useFSCache = true;
  hf.env.useBrowserCache = false;
  try {
    const pipe = await hf.pipeline('feature-extraction', model, { dtype, device: 'cpu' });
    const out = await pipe(['probe'], { pooling: 'mean', normalize: true });
    if (!(out.dims?.[1] > 0)) throw new Error('the model gave no vector');
    await pipe.dispose?.();
    if (!modelPresent(staging, model, dtype)) {
      throw new Error(`after the download, ${requiredFiles(dtype).join(', ')} are not all there`);
    }
    mkdirSync(path.dirname(path.join(abs, model)), { recursive: true });
    rmSync(path.join(abs, model), { recursive: true, force: true });
    renameSync(path.join(staging, model), path.join(abs, model));
  } catch (error) {
    return { status: 'failed', model, dir: abs, reason: `download or load failed: ${error?.message ?? String(error)}` };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return { status: 'fetched', model, dir: abs };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      dir: { type: 'string', default: process.env.KB_MODELS_DIR || path.join(ROOT, '.data/models') },
      model: { type: 'string', default: process.env.EMBEDDINGS_MODEL || DEFAULT_MODEL },
      dtype: { type: 'string', default: process.env.EMBEDDINGS_DTYPE || 'q8' },
      'probe-timeout-ms': { type: 'string', default: '10000' },
    },
  });
  if (!['q8', 'fp32'].includes(values.dtype)) {
    process.stderr.write('--dtype must be q8 or fp32\n');
    process.exit(2);
  }
  const result = await fetchModel({ dir: values.dir, model: values.model, dtype: values.dtype, probeTimeoutMs: Number(values['probe-timeout-ms']) });
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(result.status === 'present' || result.status === 'fetched' ? 0 : result.status === 'unreachable' ? 3 : 1);
}
