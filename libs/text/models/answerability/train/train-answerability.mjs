#!/usr/bin/env node
// `npm run train:answerability`: retrains the answerability model of the embedded answerer and
// rewrites answerability-model.json and test-vectors.json in the model's folder (libs/text/models/answerability/,
// the parent of this train/ folder). Reproducible: same
// data, same pinned library versions (requirements.txt), fixed seeds → the same parameters.
//   1. build (the signals are computed by the service's own code in dist/);
//   2. a Python venv outside the repository (~/.cache/kb-platform/venv-answerability, or
//      KB_ANSWERABILITY_VENV) with scikit-learn and numpy at the pinned versions;
//   3. product-set.mjs checks the product question set (product-questions.json: gold phrases in
//      their documents, absent words in none, tune/report halves);
//   4. dump-features.mjs: signals of every candidate sentence of every SQuAD 2.0 question and every
//      product question (real embedding model from ../shared/models);
//   5. train_answerability.py: logistic regressions + Platt calibration and the abstention cut-off (with the
//      coverage floor) on the tune splits, figures on the rest.
// Usage: npm run train:answerability [-- --dataset FILE]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { build, ensurePythonVenv, ROOT, step } from '../../../../../tools/lib/bootstrap.mjs';

const HERE = path.join(ROOT, 'libs/text/models/answerability/train');
const MODEL = path.dirname(HERE);
const { values } = parseArgs({ options: { dataset: { type: 'string', default: path.resolve(ROOT, '../shared/datasets/squad2/dev-half-a.json') } } });
const venv = process.env.KB_ANSWERABILITY_VENV ?? path.join(os.homedir(), '.cache/kb-platform/venv-answerability');

build();
const python = ensurePythonVenv(venv, path.join(HERE, 'requirements.txt'));
const tmp = mkdtempSync(path.join(os.tmpdir(), 'kb-answerability-'));
try {
  const features = path.join(tmp, 'features.jsonl');
  const product = path.join(HERE, 'product-questions.json');
  step('checking the product question set (gold phrases, absent words, splits)');
  execFileSync(process.execPath, [path.join(HERE, 'product-set.mjs')], { stdio: 'inherit' });
  step('computing the signals of every candidate sentence (embedding model of ../shared/models)');
  execFileSync(process.execPath, [path.join(HERE, 'dump-features.mjs'), '--dataset', values.dataset, '--product', product, '--out', features], { stdio: 'inherit' });
  step('training (scikit-learn): sentence ranker, confidence model, Platt calibration, abstention cut-off');
  execFileSync(
    python,
    [path.join(HERE, 'train_answerability.py'), '--features', features, '--dataset', path.relative(ROOT, values.dataset), '--product', path.relative(ROOT, product), '--model-out', path.join(MODEL, 'answerability-model.json'), '--vectors-out', path.join(MODEL, 'test-vectors.json')],
    { stdio: 'inherit', env: { ...process.env, PYTHONHASHSEED: '0' } },
  );
  step('wrote libs/text/models/answerability/answerability-model.json and test-vectors.json');
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
