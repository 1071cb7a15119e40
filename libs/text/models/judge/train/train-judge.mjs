#!/usr/bin/env node
// npm run train:judge — reproducible training of the embedded judge's verdict model.
// 1. A Python virtualenv with scikit-learn/numpy pinned in requirements.txt beside this file, cached outside the repository
//    ($KB_CACHE_DIR or ~/.cache/kb-platform/venv); created and filled with pip on first use.
// 2. Build, then the judge's signals of every example of SciFact train (whole corpus as the project),
//    ContractNLI dev and libs/text/models/judge/train/policy-cases.json, computed by our TypeScript signal code through
//    the real extractor, chunker, index and embedding model, and with the entailment cross-encoder
//    (libs/text/models/judge-nli-minilm, `npm run train:nli`; JUDGE_NLI_MODEL_DIR) for the `nli` variant
//    with `npm run train:judge -- --with-nli`
//    (`tools/eval/verdicts.ts --dump-features`).
// 3. train_judge.py fits on the `train` split only and writes ../judge-model.json (+ ../judge-model.check.json,
//    the vectors the unit test reproduces in TypeScript). Datasets: ../shared/datasets or $KB_DATASETS.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePythonVenv } from '../../../../../tools/lib/bootstrap.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../../../..');
/** The model's folder (libs/text/models/judge/): the parameters are written beside this train/ folder. */
const model = path.dirname(here);
const cache = process.env.KB_CACHE_DIR ?? path.join(os.homedir(), '.cache/kb-platform');
const datasets = process.env.KB_DATASETS ?? path.resolve(root, '../shared/datasets');
const env = {
  ...process.env,
  KB_MODELS_DIR: process.env.KB_MODELS_DIR ?? path.resolve(root, '../shared/models'),
  EMBEDDINGS_MODEL: process.env.EMBEDDINGS_MODEL ?? 'all-MiniLM-L6-v2',
};
delete env.LLM_BASE_URL;
// --with-nli: also fit the `nli` variant on the entailment cross-encoder's scores. Off by default: the
// variant measured worse on held-out ContractNLI (docs/check.md "Entailment cross-encoder: figures"),
// and a judge-model.json with it switches the check service to it.
const withNli = process.argv.includes('--with-nli');
if (!withNli) env.JUDGE_NLI_MODEL_DIR = 'none';
// The `rsm` variant (issue 27) is fitted on the requirement-satisfaction model's readings
// (libs/text/models/judge-rsm-minilm, `npm run train:rsm`; JUDGE_RSM_MODEL_DIR) unless --without-rsm; its rows
// include the control frameworks of the `fit` split (tools/eval/controls.ts), and its held-out report those of
// the `report` split.
const withRsm = !process.argv.includes('--without-rsm');
/** Construction plans of policy-cases.json (libs/text/models/judge-rsm-minilm/train/train_rsm.py CONSTRUCTION_POLICY_DOCUMENTS). */
const CONSTRUCTION_PLANS = ['site-plan', 'noise-plan', 'env-plan', 'fire-plan', 'vehicle-plan'];
if (!withRsm) env.JUDGE_RSM_MODEL_DIR = 'none';
// One OpenMP thread: scikit-learn's gradient boosting spins its threads on a shared 2-core machine (10x slower).
env.OMP_NUM_THREADS = process.env.OMP_NUM_THREADS ?? '1';

function run(cmd, args, opts = {}) {
  process.stderr.write(`$ ${cmd} ${args.join(' ')}\n`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: ['ignore', opts.stdout ?? 'inherit', 'inherit'], env });
  if (r.status !== 0) process.exit(r.status ?? 1);
  return r;
}

const python = ensurePythonVenv(path.join(cache, 'venv'), path.join(here, 'requirements.txt'));

run(process.execPath, ['tools/build.mjs']);
const work = path.join(cache, 'judge-train');
mkdirSync(work, { recursive: true });
const { SIGNAL_NAMES, NLI_SIGNAL_NAMES, NLI_CANDIDATES, RSM_SIGNAL_NAMES } = await import(path.join(root, 'dist/libs/text/src/verdict-signals.js'));
writeFileSync(path.join(work, 'signal-names.json'), JSON.stringify(SIGNAL_NAMES));
writeFileSync(path.join(work, 'nli-signal-names.json'), JSON.stringify(NLI_SIGNAL_NAMES));
writeFileSync(path.join(work, 'rsm-signal-names.json'), JSON.stringify(RSM_SIGNAL_NAMES));
const sets = [
  ['scifact', path.join(datasets, 'scifact')],
  ['contractnli', path.join(datasets, 'contractnli/dev.json')],
  ['policy', path.join(here, 'policy-cases.json')],
];
const dumps = [];
for (const [name, dataset] of sets) {
  const file = path.join(work, `${name}.jsonl`);
  run(process.execPath, ['dist/tools/eval/verdicts.js', '--dataset', dataset, '--split', 'all', '--index-dir', path.join(cache, 'eval-index', name), '--vector-cache', path.join(cache, 'eval-vectors', `${env.EMBEDDINGS_MODEL}-${name}.jsonl`), '--dump-features', file]);
  dumps.push(file);
}
if (withRsm) {
  // Control frameworks: the `fit` split against the procedures (COMPLIANT) and against unrelated text (NOT_FOUND:
  // the Debian Policy Manual and FHS, and the construction plans written for the policy cases; not the construction
  // documents of eval:controls' negative control), and the `report` split against the procedures and the negative
  // control (reported only).
  const corpus = path.resolve(root, '../shared/corpus/txt');
  // The construction plans written for the policy cases, as files (unrelated to the controls, in the product's other domain).
  const plans = JSON.parse(readFileSync(path.join(here, 'policy-cases.json'), 'utf8')).documents.filter((d) => CONSTRUCTION_PLANS.includes(d.id));
  const planFiles = plans.map((d) => {
    const file = path.join(work, 'negative', d.file_name);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, d.text);
    return file;
  });
  const index = path.join(cache, 'eval-index');
  const fit = path.join(work, 'controls-fit.jsonl');
  const report = path.join(work, 'controls-report.jsonl');
  const controls = path.join(datasets, 'controls');
  // `--without-title`: the committed verdict model was fitted on the requirements' summaries alone.
  const negatives = [path.join(corpus, 'debian-policy-4.6.2.0.txt'), path.join(corpus, 'debian-fhs-3.0.txt'), ...planFiles].flatMap((f) => ['--negative', f]);
  run(process.execPath, ['dist/tools/eval/controls.js', '--dataset', controls, '--split', 'fit', '--skip-breakdown', '--without-title', ...negatives, '--index-dir', path.join(index, 'controls-fit'), '--dump-features', fit]);
  // The same `fit` requirements against other unrelated text, the U.S. Department of Labor's forms (injury, accident
  // and payroll records): rows the rsm variant's COMPLIANT confidence threshold must stay above, never fitted on
  // (train_judge.py corroborated_threshold). Separate from the Debian set because hybrid search never ranks a form
  // above the Debian Policy Manual, so against both together the forms are never read.
  const forms = path.join(work, 'controls-fit-forms.jsonl');
  const formFiles = readdirSync(path.resolve(root, '../shared/corpus/pdf')).filter((f) => f.startsWith('dol_')).sort().map((f) => path.resolve(root, '../shared/corpus/pdf', f));
  run(process.execPath, ['dist/tools/eval/controls.js', '--dataset', controls, '--split', 'fit', '--skip-breakdown', '--without-title', ...formFiles.flatMap((f) => ['--negative', f]), '--index-dir', path.join(index, 'controls-fit-forms'), '--dump-features', forms, '--unrelated-only']);
  // And against eval:controls' own unrelated documents (construction and safety documents, the OSH Act, OSHA's heat
  // pages): statute and safety text full of "shall keep records", "shall provide training", the near misses of a
  // management-system clause. Only the `fit` requirements: the `report` ones against these documents are the negative
  // control eval:controls reports.
  const safety = path.join(work, 'controls-fit-safety.jsonl');
  run(process.execPath, ['dist/tools/eval/controls.js', '--dataset', controls, '--split', 'fit', '--skip-breakdown', '--without-title', '--index-dir', path.join(index, 'controls-fit-safety'), '--dump-features', safety, '--unrelated-only']);
  run(process.execPath, ['dist/tools/eval/controls.js', '--dataset', controls, '--split', 'report', '--skip-breakdown', '--without-title', '--index-dir', path.join(index, 'controls-report'), '--dump-features', report]);
  dumps.push(fit, forms, safety, report);
}
run(python, [
  path.join(here, 'train_judge.py'),
  '--names', path.join(work, 'signal-names.json'),
  '--embedding-model', env.EMBEDDINGS_MODEL,
  ...(withNli ? ['--nli-names', path.join(work, 'nli-signal-names.json'), '--nli-model', 'judge-nli-minilm', '--nli-candidates', String(NLI_CANDIDATES)] : []),
  ...(withRsm ? ['--rsm-names', path.join(work, 'rsm-signal-names.json'), '--rsm-model', 'judge-rsm-minilm'] : []),
  '--out', path.join(model, 'judge-model.json'),
  '--check', path.join(model, 'judge-model.check.json'),
  ...dumps,
]);
process.stderr.write('wrote libs/text/models/judge/judge-model.json and judge-model.check.json\n');
