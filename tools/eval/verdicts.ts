/**
 * Verdict-quality evaluation: runs the check service's judge over a labelled set, after ingesting the
 * set's documents through the real extractor, chunker and index (the same code the ingestion and
 * retrieval services run), and prints accuracy, macro-F1, per-class precision/recall/F1 and the
 * confusion matrix as JSON on stdout (progress on stderr).
 *
 *   npm run eval:verdicts -- --dataset ../shared/datasets/scifact [--split heldout|train|all] [--limit N] [--top-k 8]
 *   npm run eval:verdicts -- --dataset ../shared/datasets/contractnli/dev.json [--split …]
 *   options: --index-dir DIR (keep the built index there and reuse it on the next run),
 *            --dump-features FILE (embedded judge: write one JSON line of judge signals per example instead
 *            of judging; used by `npm run train:judge`),
 *            --vector-cache FILE (sentence vectors kept between runs, read at start and written at the end),
 *            --baseline (today's hand-tuned heuristic judge, for before/after figures)
 *
 * Datasets (see ../shared/datasets/README.md for the label mapping):
 * - SciFact (a folder with corpus.jsonl and claims_train.jsonl): the WHOLE corpus (5,183 abstracts) is
 *   the project; each claim is a requirement checked against it. SUPPORT → COMPLIANT, CONTRADICT →
 *   CONTRADICTS, no evidence → NOT_FOUND.
 * - ContractNLI (a JSON file like dev.json): each NDA is a project, each of its 17 hypotheses a
 *   requirement. Entailment → COMPLIANT, Contradiction → CONTRADICTS, NotMentioned → NOT_FOUND.
 * - Policy cases (a JSON file with `documents` and `cases`, like libs/text/models/judge/train/policy-cases.json).
 *
 * Split ({@link splitOf}): a fixed 70/30 split by group — the NDA for ContractNLI, the smallest cited
 * abstract for SciFact (claims written from the same citation stay together) — so `train:judge` never
 * sees the held-out groups. Default `--split heldout`.
 *
 * Judge: the check service's embedded judge (with the in-process embedding model when KB_MODELS_DIR /
 * EMBEDDINGS_* find one, else lexical only), or the configured chat model when LLM_BASE_URL is set.
 * Retrieval: BM25 over the LanceDB chunk store, top-k chunks of the project's documents, as
 * `POST /check/verify` retrieves them lexically.
 */
import pino from 'pino';
import { DEFAULT_JUDGE_PARAMS, judgeRequirementWith, requirementCore, type PassageInput } from '@kb/text';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '@kb/common';
import { chatModelEnv, embeddingsConfigFromEnv, ModelProviderError, openEmbeddingModel } from '@kb/models';
import { storedChunksOf } from './stored-chunks';
import { LanceDbChunkStore } from '../../apps/retrieval/src/store/lancedb-chunk-store';
import { VERIFY_TOP_K } from '../../apps/check/src/verification/assessor';
import { createJudge, openNliModel, openRsmModel } from '../../apps/check/src/verification/create-judge';
import { EmbeddedJudge, SentenceVectorCache, type RequirementJudge } from '../../apps/check/src/verification/judges';

type Verdict = 'COMPLIANT' | 'CONTRADICTS' | 'NOT_FOUND';
const VERDICTS: Verdict[] = ['COMPLIANT', 'CONTRADICTS', 'NOT_FOUND'];
export const ORG = 'eval-org';
export type Split = 'train' | 'heldout';

interface Doc {
  id: string;
  fileName: string;
  text: string;
}
interface Example {
  id: string;
  requirement: string;
  /** Documents of the example's project; empty = every document of the dataset. */
  documentIds: string[];
  gold: Verdict;
  split: Split;
  /** The split unit (NDA, smallest cited abstract, policy document). */
  group: string;
}
interface Dataset {
  name: string;
  /** Short key written into feature dumps. */
  key: 'scifact' | 'contractnli' | 'policy';
  docs: Doc[];
  examples: Example[];
}

interface Args {
  dataset: string;
  limit: number;
  topK: number;
  split: Split | 'all';
  indexDir?: string;
  dumpFeatures?: string;
  /** File of sentence vectors kept between runs (embedding the same sentences again gives the same vectors). */
  vectorCache?: string;
  /** Judge with today's (before issue 13) hand-tuned heuristic judge, for before/after figures. */
  baseline: boolean;
}

function args(argv: string[]): Args {
  const get = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const dataset = get('--dataset');
  const split = (get('--split') ?? 'heldout') as Args['split'];
  if (!dataset || !['train', 'heldout', 'all'].includes(split)) {
    process.stderr.write(
      'usage: npm run eval:verdicts -- --dataset <scifact folder | contractnli .json> [--split heldout|train|all] [--limit N] [--top-k K] [--index-dir DIR] [--dump-features FILE]\n',
    );
    process.exit(2);
  }
  return {
    dataset,
    split,
    limit: Number(get('--limit') ?? Infinity),
    topK: Number(get('--top-k') ?? VERIFY_TOP_K),
    indexDir: get('--index-dir'),
    dumpFeatures: get('--dump-features'),
    vectorCache: get('--vector-cache'),
    baseline: argv.includes('--baseline'),
  };
}

/** Document id of a dataset document inside the evaluation index. */
const docId = (prefix: string, id: string | number) => `${prefix}-${id}`;

/** Share of groups held out for reporting. */
export const HELDOUT_SHARE = 0.3;

/**
 * The fixed split of a group (an NDA, a SciFact abstract): FNV-1a 32-bit hash of `dataset:group` with
 * MurmurHash3's fmix32 finaliser,
 * held out when hash mod 1000 < 1000 × {@link HELDOUT_SHARE}. Deterministic, independent of order and limits.
 */
export function splitOf(dataset: string, group: string | number): Split {
  let h = 0x811c9dc5;
  for (const ch of `${dataset}:${group}`) {
    h ^= ch.charCodeAt(0);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  // MurmurHash3's fmix32 finaliser spreads FNV's low bits (ids differing in one digit).
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  h ^= h >>> 16;
  return (h >>> 0) % 1000 < 1000 * HELDOUT_SHARE ? 'heldout' : 'train';
}

/** SciFact: every abstract of corpus.jsonl is a document of one project; each claim of claims_train.jsonl a requirement. */
export function loadSciFact(dir: string): Dataset {
  const docs: Doc[] = [];
  for (const line of readFileSync(path.join(dir, 'corpus.jsonl'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const d = JSON.parse(line);
    docs.push({ id: docId('scifact', d.doc_id), fileName: `scifact-${d.doc_id}.txt`, text: `${d.title}\n\n${(d.abstract as string[]).join(' ')}\n` });
  }
  const examples: Example[] = [];
  for (const line of readFileSync(path.join(dir, 'claims_train.jsonl'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const c = JSON.parse(line);
    const labels = new Set<string>();
    for (const sets of Object.values(c.evidence as Record<string, { label: string }[]>)) for (const s of sets) labels.add(s.label);
    const gold: Verdict = labels.size === 0 ? 'NOT_FOUND' : labels.has('CONTRADICT') ? 'CONTRADICTS' : 'COMPLIANT';
    const group = Math.min(...((c.cited_doc_ids as number[]).length ? (c.cited_doc_ids as number[]) : [c.id]));
    examples.push({ id: `scifact-${c.id}`, requirement: c.claim, documentIds: [], gold, split: splitOf('scifact', group), group: `scifact:${group}` });
  }
  return { name: 'SciFact train (whole corpus)', key: 'scifact', docs, examples };
}

export function loadContractNli(file: string): Dataset {
  const data = JSON.parse(readFileSync(file, 'utf8'));
  const map: Record<string, Verdict> = { Entailment: 'COMPLIANT', Contradiction: 'CONTRADICTS', NotMentioned: 'NOT_FOUND' };
  const docs: Doc[] = [];
  const examples: Example[] = [];
  for (const doc of data.documents) {
    const id = docId('nda', doc.id);
    docs.push({ id, fileName: doc.file_name ?? `nda-${doc.id}.txt`, text: doc.text });
    const split = splitOf('contractnli', doc.id);
    for (const [key, ann] of Object.entries(doc.annotation_sets[0].annotations as Record<string, { choice: string }>)) {
      examples.push({
        id: `cnli-${doc.id}-${key}`,
        requirement: data.labels[key].hypothesis,
        documentIds: [id],
        gold: map[ann.choice],
        split,
        group: `nda:${doc.id}`,
      });
    }
  }
  return { name: `ContractNLI ${path.basename(file, '.json')}`, key: 'contractnli', docs, examples };
}

/**
 * Written policy cases (libs/text/models/judge/train/policy-cases.json): `documents` [{id, file_name, text}] and `cases`
 * [{document, requirement, label}] with the verdict as label; each document is a project, split by document.
 */
export function loadPolicyCases(file: string): Dataset {
  const data = JSON.parse(readFileSync(file, 'utf8'));
  const docs: Doc[] = (data.documents as { id: string; file_name: string; text: string }[]).map((d) => ({
    id: docId('policy', d.id),
    fileName: d.file_name,
    text: d.text,
  }));
  const examples: Example[] = (data.cases as { document: string; requirement: string; label: Verdict }[]).map((c, i) => {
    if (!VERDICTS.includes(c.label)) throw new Error(`${file}: case ${i} has label "${c.label}"`);
    return {
      id: `policy-${i}`,
      requirement: c.requirement,
      documentIds: [docId('policy', c.document)],
      gold: c.label,
      split: splitOf('policy', c.document),
      group: `policy:${c.document}`,
    };
  });
  return { name: `policy cases ${path.basename(file, '.json')}`, key: 'policy', docs, examples };
}

/** Loads a dataset by its shape: a SciFact folder, a ContractNLI .json, or a policy-cases .json (has `cases`). */
export function loadDataset(p: string): Dataset {
  if (!p.endsWith('.json')) return loadSciFact(p);
  return 'cases' in JSON.parse(readFileSync(p, 'utf8')) ? loadPolicyCases(p) : loadContractNli(p);
}

/** Extracts (real extractor, as text/plain), chunks (real chunker) and indexes (real LanceDB store) every document. */
export async function ingest(store: LanceDbChunkStore, docs: Doc[], work: string): Promise<number> {
  let chunks = 0;
  for (const [i, d] of docs.entries()) {
    const file = path.join(work, `doc-${i}.txt`);
    writeFileSync(file, d.text);
    const stored = await storedChunksOf(file, 'text/plain', { orgId: ORG, documentId: d.id, fileName: d.fileName }, () => randomUUID());
    rmSync(file, { force: true });
    await store.replaceDocumentChunks(ORG, d.id, stored);
    chunks += stored.length;
    if ((i + 1) % 500 === 0) process.stderr.write(`indexed ${i + 1}/${docs.length} documents\n`);
  }
  await store.optimize();
  return chunks;
}

interface Row {
  gold: Verdict;
  pred: Verdict;
  confidence: number;
}

/** The confidence from which a verdict is relied upon (decisions.md: below 0.7 = insufficient evidence). */
export const CONFIDENT = 0.7;

/**
 * Accuracy, macro-F1 (unweighted mean of the three classes' F1), per-class P/R/F1, confusion[gold][pred],
 * precision and coverage of the confident verdicts (confidence ≥ {@link CONFIDENT}), and a reliability
 * table: confidence bins of width 0.1 with their mean confidence and accuracy, and the expected calibration
 * error (Guo et al., 2017, "On Calibration of Modern Neural Networks": Σ n_b/N · |acc_b − conf_b|).
 */
export function verdictMetrics(rows: Row[]) {
  const confusion = Object.fromEntries(VERDICTS.map((g) => [g, Object.fromEntries(VERDICTS.map((p) => [p, 0]))])) as Record<Verdict, Record<Verdict, number>>;
  for (const r of rows) confusion[r.gold][r.pred]++;
  const perClass = Object.fromEntries(
    VERDICTS.map((c) => {
      const tp = confusion[c][c];
      const predicted = VERDICTS.reduce((s, g) => s + confusion[g][c], 0);
      const actual = VERDICTS.reduce((s, p) => s + confusion[c][p], 0);
      const precision = predicted ? tp / predicted : 0;
      const recall = actual ? tp / actual : 0;
      const f1 = precision + recall ? (2 * precision * recall) / (precision + recall) : 0;
      return [c, { precision: r3(precision), recall: r3(recall), f1: r3(f1), support: actual }];
    }),
  ) as Record<Verdict, { precision: number; recall: number; f1: number; support: number }>;
  const right = (xs: Row[]) => xs.filter((r) => r.gold === r.pred).length;
  const accuracy = rows.length ? right(rows) / rows.length : 0;
  const macroF1 = VERDICTS.reduce((s, c) => s + perClass[c].f1, 0) / VERDICTS.length;
  const confident = rows.filter((r) => r.confidence >= CONFIDENT);
  const reliability = [];
  let ece = 0;
  for (let b = 0; b < 10; b++) {
    const bin = rows.filter((r) => Math.min(9, Math.floor(r.confidence * 10)) === b);
    if (!bin.length) continue;
    const conf = bin.reduce((s, r) => s + r.confidence, 0) / bin.length;
    const acc = right(bin) / bin.length;
    ece += (bin.length / rows.length) * Math.abs(acc - conf);
    reliability.push({ bin: `${(b / 10).toFixed(1)}-${((b + 1) / 10).toFixed(1)}`, n: bin.length, mean_confidence: r3(conf), accuracy: r3(acc) });
  }
  return {
    examples: rows.length,
    accuracy: r3(accuracy),
    macro_f1: r3(macroF1),
    per_class: perClass,
    confusion,
    confident: {
      threshold: CONFIDENT,
      n: confident.length,
      precision: confident.length ? r3(right(confident) / confident.length) : null,
      coverage: rows.length ? r3(confident.length / rows.length) : 0,
      per_verdict: Object.fromEntries(
        VERDICTS.map((v) => {
          const xs = confident.filter((r) => r.pred === v);
          return [v, { n: xs.length, precision: xs.length ? r3(right(xs) / xs.length) : null }];
        }),
      ),
    },
    reliability,
    ece: r3(ece),
  };
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;

/** Opens the index: reused from `indexDir` when a previous run completed it there, else built. */
async function openIndex(set: Dataset, indexDir: string | undefined, work: string): Promise<{ store: LanceDbChunkStore; chunks: number; ingestMs: number }> {
  const dir = indexDir ? path.resolve(indexDir) : path.join(work, 'lancedb');
  const marker = path.join(dir, 'kb-eval-index.json');
  const t0 = Date.now();
  if (indexDir && existsSync(marker)) {
    const info = JSON.parse(readFileSync(marker, 'utf8'));
    if (info.dataset === set.name && info.documents === set.docs.length) {
      const store = await LanceDbChunkStore.open(dir, { optimizeDelayMs: 0 });
      process.stderr.write(`${set.name}: reusing the index in ${dir}\n`);
      return { store, chunks: info.chunks, ingestMs: 0 };
    }
    rmSync(dir, { recursive: true, force: true });
  }
  mkdirSync(dir, { recursive: true });
  const store = await LanceDbChunkStore.open(dir, { optimizeDelayMs: 0 });
  const chunks = await ingest(store, set.docs, work);
  if (indexDir) writeFileSync(marker, JSON.stringify({ dataset: set.name, documents: set.docs.length, chunks }));
  return { store, chunks, ingestMs: Date.now() - t0 };
}

async function main() {
  const a = args(process.argv.slice(2));
  const full = loadDataset(a.dataset);
  const examples = full.examples.filter((e) => a.split === 'all' || e.split === a.split).slice(0, a.limit);
  const work = mkdtempSync(path.join(os.tmpdir(), 'kb-eval-'));
  const logger = pino({ base: { service: 'eval' } }, pino.destination({ dest: 2, sync: true }));
  const embeddings = await openEmbeddingModel(embeddingsConfigFromEnv(process.env));
  const vectors = loadVectorCache(a.vectorCache);
  // The entailment cross-encoder as the check service opens it (JUDGE_NLI_MODEL_DIR; `none` = the judge without it).
  const nli = a.baseline
    ? { model: null, reason: '--baseline' }
    : await openNliModel(process.env.JUDGE_NLI_MODEL_DIR ?? '', embeddings.model, !!a.dumpFeatures);
  const rsm = a.baseline
    ? { model: null, reason: '--baseline' }
    : await openRsmModel(process.env.JUDGE_RSM_MODEL_DIR ?? '', embeddings.model, !!a.dumpFeatures);
  const judge: RequirementJudge = a.baseline
    ? baselineJudge()
    : process.env.LLM_BASE_URL
      ? createJudge(loadConfig(chatModelEnv, process.env), logger, embeddings.model, nli.model, rsm.model)
      : new EmbeddedJudge(embeddings.model, vectors, logger, nli.model, rsm.model);
  if (a.dumpFeatures && !(judge instanceof EmbeddedJudge)) throw new Error('--dump-features needs the embedded judge (unset LLM_BASE_URL)');
  const { store, chunks, ingestMs } = await openIndex(full, a.indexDir, work);
  const dump: string[] = [];
  try {
    process.stderr.write(
      `${full.name}: ${full.docs.length} documents → ${chunks} chunks (${ingestMs} ms); judging ${examples.length} requirements (split ${a.split}) with ${judge.model}` +
        `${embeddings.model ? ' + embeddings' : ` (no embedding model: ${embeddings.reason})`}` +
        `${nli.model ? ` + entailment model ${nli.model.name}${judge instanceof EmbeddedJudge && !judge.entailment && !a.dumpFeatures ? ' (the committed judge has no nli variant: not used)' : ''}` : ` (no entailment model: ${nli.reason})`}\n`,
    );
    const rows: Row[] = [];
    let invalidOutputs = 0;
    const t1 = Date.now();
    for (const [i, ex] of examples.entries()) {
      // What the Assessor searches for: the requirement's core statement (apps/check/src/verification/assessor.ts).
      const hits = await store.search(requirementCore(ex.requirement), { orgId: ORG, documentIds: ex.documentIds }, a.topK);
      const passages: PassageInput[] = hits.map((h) => ({
        chunkId: h.chunk.id,
        documentId: h.chunk.documentId,
        fileName: h.chunk.fileName,
        text: h.chunk.text,
        startPage: h.chunk.startPage,
        endPage: h.chunk.endPage,
        pageSpans: h.chunk.pageSpans,
        score: h.score,
      }));
      if (a.dumpFeatures && judge instanceof EmbeddedJudge) {
        const signals = await judge.signals(ex.requirement, passages);
        dump.push(
          JSON.stringify({
            id: ex.id,
            dataset: full.key,
            split: ex.split,
            group: ex.group,
            gold: ex.gold,
            lexical: signals.lexical,
            semantic: signals.semantic,
            nli: signals.nli,
            nli_scores: signals.nliScores,
            rsm: signals.rsm,
            rsm_scores: signals.rsmScores,
          }),
        );
        if ((i + 1) % 100 === 0) process.stderr.write(`signals ${i + 1}/${examples.length}\n`);
        continue;
      }
      let row: Row;
      try {
        const { judgement } = await judge.judge(ex.requirement, passages);
        row = { gold: ex.gold, pred: judgement.verdict, confidence: judgement.confidence };
      } catch (err) {
        // A model whose structured output stays invalid after the repair: the service answers with an
        // error, which backs no verdict; counted as NOT_FOUND at confidence 0 and reported as invalid_model_outputs.
        if (!(err instanceof ModelProviderError && err.code === 'invalid_output')) throw err;
        invalidOutputs++;
        row = { gold: ex.gold, pred: 'NOT_FOUND', confidence: 0 };
      }
      rows.push(row);
      if ((i + 1) % 100 === 0) process.stderr.write(`judged ${i + 1}/${examples.length}\n`);
    }
    if (a.vectorCache && embeddings.model) await saveVectorCache(vectors, a.vectorCache);
    if (a.dumpFeatures) {
      writeFileSync(a.dumpFeatures, dump.join('\n') + '\n');
      process.stdout.write(`${JSON.stringify({ dataset: full.name, split: a.split, signals: dump.length, file: a.dumpFeatures })}\n`);
      return;
    }
    const majority = VERDICTS.map((v) => ({ v, n: rows.filter((r) => r.gold === v).length })).sort((x, y) => y.n - x.n)[0].v;
    const majorityRows = rows.map((r) => ({ gold: r.gold, pred: majority, confidence: 1 }));
    const result = {
      dataset: full.name,
      split: a.split,
      judge: judge.model,
      embeddings: embeddings.model ? ((embeddings.model as { model?: string }).model ?? embeddings.provider) : null,
      entailment_model: judge instanceof EmbeddedJudge && judge.entailment ? (nli.model?.name ?? null) : null,
      satisfaction_model: judge instanceof EmbeddedJudge && judge.satisfaction ? (rsm.model?.name ?? null) : null,
      top_k: a.topK,
      documents: full.docs.length,
      chunks,
      ...verdictMetrics(rows),
      majority_baseline: { verdict: majority, ...pick(verdictMetrics(majorityRows), ['accuracy', 'macro_f1']) },
      ...(process.env.LLM_BASE_URL ? { invalid_model_outputs: invalidOutputs } : {}),
      ingest_ms: ingestMs,
      judge_ms_per_requirement: r3((Date.now() - t1) / Math.max(1, rows.length)),
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await store.close();
    rmSync(work, { recursive: true, force: true });
  }
}

/** Reads a vector cache file (JSON lines `{t: text, v: base64 Float32Array}`); a missing file gives an empty cache. */
function loadVectorCache(file: string | undefined): SentenceVectorCache {
  const cache = new SentenceVectorCache(1_000_000);
  if (!file || !existsSync(file)) return cache;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    const { t, v } = JSON.parse(line) as { t: string; v: string };
    const buf = Buffer.from(v, 'base64');
    cache.set(t, Array.from(new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4)));
  }
  process.stderr.write(`${cache.size} sentence vectors read from ${file}\n`);
  return cache;
}

async function saveVectorCache(cache: SentenceVectorCache, file: string): Promise<void> {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  const out = createWriteStream(tmp);
  for (const [t, v] of cache) {
    if (!out.write(`${JSON.stringify({ t, v: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') })}\n`))
      await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
  renameSync(tmp, file);
}

/** The hand-tuned heuristic judge the check service used before the learned judge (libs/text/src/heuristic-judge.ts). */
function baselineJudge(): RequirementJudge {
  return {
    model: 'embedded-heuristic-judge (before)',
    judge: async (requirement, passages) => ({ judgement: judgeRequirementWith(requirement, passages, DEFAULT_JUDGE_PARAMS), calls: [] }),
    breakDown: async () => {
      throw new Error('not used by the evaluation');
    },
  };
}

function pick<T extends object, K extends keyof T>(o: T, keys: K[]): Pick<T, K> {
  return Object.fromEntries(keys.map((k) => [k, o[k]])) as Pick<T, K>;
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${err?.stack ?? err}\n`);
    process.exit(1);
  });
}
