/**
 * Verdict-quality evaluation: runs the check service's judge over a labelled set, after ingesting the
 * set's documents through the real extractor, chunker and index (the same code the ingestion and
 * retrieval services run), and prints accuracy, macro-F1, per-class precision/recall/F1 and the
 * confusion matrix as JSON on stdout (progress on stderr).
 *
 *   npm run eval:verdicts -- --dataset ../shared/datasets/scifact            [--limit N] [--top-k 8]
 *   npm run eval:verdicts -- --dataset ../shared/datasets/contractnli/dev.json
 *
 * Datasets (see ../shared/datasets/README.md for the label mapping):
 * - SciFact (a folder with corpus.jsonl and claims_train.jsonl): each claim is a requirement; its cited
 *   abstracts are the project's documents. SUPPORT → COMPLIANT, CONTRADICT → CONTRADICTS, no evidence →
 *   NOT_FOUND.
 * - ContractNLI (a JSON file like dev.json): each NDA is a project, each of its 17 hypotheses a
 *   requirement. Entailment → COMPLIANT, Contradiction → CONTRADICTS, NotMentioned → NOT_FOUND.
 *
 * Judge: the embedded heuristic judge, or the configured chat model when LLM_BASE_URL is set (as in
 * the check service). Retrieval: BM25 over the LanceDB chunk store, top-k chunks of the project's
 * documents, exactly as `POST /check/verify` retrieves them.
 */
import pino from 'pino';
import { ModelProviderError } from '@kb/models';
import type { PassageInput } from '@kb/text';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { chunkDocument } from '../../apps/ingestion/src/chunking';
import { extractDocument } from '../../apps/ingestion/src/extraction';
import { LanceDbChunkStore } from '../../apps/retrieval/src/store/lancedb-chunk-store';
import type { StoredChunk } from '../../apps/retrieval/src/store/chunk-store';
import { VERIFY_TOP_K } from '../../apps/check/src/verification/assessor';
import { createJudge } from '../../apps/check/src/verification/create-judge';

type Verdict = 'COMPLIANT' | 'CONTRADICTS' | 'NOT_FOUND';
const VERDICTS: Verdict[] = ['COMPLIANT', 'CONTRADICTS', 'NOT_FOUND'];
export const ORG = 'eval-org';

interface Doc {
  id: string;
  fileName: string;
  text: string;
}
interface Example {
  id: string;
  requirement: string;
  /** Documents of the example's project. */
  documentIds: string[];
  gold: Verdict;
}
interface Dataset {
  name: string;
  docs: Doc[];
  examples: Example[];
}

function args(argv: string[]): { dataset: string; limit: number; topK: number } {
  const get = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const dataset = get('--dataset');
  if (!dataset) {
    process.stderr.write('usage: npm run eval:verdicts -- --dataset <scifact folder | contractnli .json> [--limit N] [--top-k K]\n');
    process.exit(2);
  }
  return { dataset, limit: Number(get('--limit') ?? Infinity), topK: Number(get('--top-k') ?? VERIFY_TOP_K) };
}

/** Document id of a dataset document inside the evaluation index. */
const docId = (prefix: string, id: string | number) => `${prefix}-${id}`;

export function loadSciFact(dir: string, limit: number): Dataset {
  const corpus = new Map<number, { title: string; abstract: string[] }>();
  for (const line of readFileSync(path.join(dir, 'corpus.jsonl'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const d = JSON.parse(line);
    corpus.set(d.doc_id, { title: d.title, abstract: d.abstract });
  }
  const examples: Example[] = [];
  const used = new Set<number>();
  for (const line of readFileSync(path.join(dir, 'claims_train.jsonl'), 'utf8').split('\n')) {
    if (!line.trim() || examples.length >= limit) continue;
    const c = JSON.parse(line);
    const labels = new Set<string>();
    for (const sets of Object.values(c.evidence as Record<string, { label: string }[]>)) for (const s of sets) labels.add(s.label);
    const gold: Verdict = labels.size === 0 ? 'NOT_FOUND' : labels.has('CONTRADICT') ? 'CONTRADICTS' : 'COMPLIANT';
    const cited = (c.cited_doc_ids as number[]).filter((id) => corpus.has(id));
    cited.forEach((id) => used.add(id));
    examples.push({ id: `scifact-${c.id}`, requirement: c.claim, documentIds: cited.map((id) => docId('scifact', id)), gold });
  }
  const docs = [...used].map((id) => {
    const d = corpus.get(id)!;
    return { id: docId('scifact', id), fileName: `scifact-${id}.txt`, text: `${d.title}\n\n${d.abstract.join(' ')}\n` };
  });
  return { name: 'SciFact train', docs, examples };
}

export function loadContractNli(file: string, limit: number): Dataset {
  const data = JSON.parse(readFileSync(file, 'utf8'));
  const map: Record<string, Verdict> = { Entailment: 'COMPLIANT', Contradiction: 'CONTRADICTS', NotMentioned: 'NOT_FOUND' };
  const docs: Doc[] = [];
  const examples: Example[] = [];
  for (const doc of data.documents) {
    if (examples.length >= limit) break;
    const id = docId('nda', doc.id);
    docs.push({ id, fileName: doc.file_name ?? `nda-${doc.id}.txt`, text: doc.text });
    for (const [key, ann] of Object.entries(doc.annotation_sets[0].annotations as Record<string, { choice: string }>)) {
      if (examples.length >= limit) break;
      examples.push({ id: `cnli-${doc.id}-${key}`, requirement: data.labels[key].hypothesis, documentIds: [id], gold: map[ann.choice] });
    }
  }
  return { name: `ContractNLI ${path.basename(file, '.json')}`, docs, examples };
}

/** Extracts (real extractor, as text/plain), chunks (real chunker) and indexes (real LanceDB store) every document. */
export async function ingest(store: LanceDbChunkStore, docs: Doc[], work: string): Promise<number> {
  let chunks = 0;
  for (const [i, d] of docs.entries()) {
    const file = path.join(work, `doc-${i}.txt`);
    writeFileSync(file, d.text);
    const extracted = await extractDocument(file, 'text/plain');
    const stored: StoredChunk[] = chunkDocument(extracted).map((c) => ({
      id: randomUUID(),
      orgId: ORG,
      projectId: null,
      documentId: d.id,
      fileName: d.fileName,
      chunkIndex: c.index,
      text: c.text,
      headingPath: c.headingPath,
      startPage: c.startPage,
      endPage: c.endPage,
      pageSpans: c.pageSpans,
    }));
    await store.replaceDocumentChunks(ORG, d.id, stored);
    chunks += stored.length;
    if ((i + 1) % 200 === 0) process.stderr.write(`indexed ${i + 1}/${docs.length} documents\n`);
  }
  return chunks;
}

/** Accuracy, macro-F1 (unweighted mean of the three classes' F1), per-class P/R/F1 and confusion[gold][pred]. */
export function verdictMetrics(rows: { gold: Verdict; pred: Verdict }[]) {
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
  const accuracy = rows.length ? VERDICTS.reduce((s, c) => s + confusion[c][c], 0) / rows.length : 0;
  const macroF1 = VERDICTS.reduce((s, c) => s + perClass[c].f1, 0) / VERDICTS.length;
  return { examples: rows.length, accuracy: r3(accuracy), macro_f1: r3(macroF1), per_class: perClass, confusion };
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;

async function main() {
  const { dataset, limit, topK } = args(process.argv.slice(2));
  const set = dataset.endsWith('.json') ? loadContractNli(dataset, limit) : loadSciFact(dataset, limit);
  const work = mkdtempSync(path.join(os.tmpdir(), 'kb-eval-'));
  const store = await LanceDbChunkStore.open(path.join(work, 'lancedb'), { optimizeDelayMs: 0 });
  const judge = createJudge(process.env, pino({ base: { service: 'eval' } }, pino.destination({ dest: 2, sync: true })));
  try {
    const t0 = Date.now();
    const chunks = await ingest(store, set.docs, work);
    const ingestMs = Date.now() - t0;
    process.stderr.write(`${set.name}: ${set.docs.length} documents → ${chunks} chunks in ${ingestMs} ms; judging ${set.examples.length} requirements with ${judge.model}\n`);
    const rows: { gold: Verdict; pred: Verdict }[] = [];
    let invalidOutputs = 0;
    const t1 = Date.now();
    for (const [i, ex] of set.examples.entries()) {
      const hits = ex.documentIds.length ? await store.search(ex.requirement, { orgId: ORG, documentIds: ex.documentIds }, topK) : [];
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
      let pred: Verdict;
      try {
        pred = (await judge.judge(ex.requirement, passages)).judgement.verdict;
      } catch (err) {
        // A model whose structured output stays invalid after the repair: the service answers with an
        // error, which backs no verdict; counted as NOT_FOUND here and reported as invalid_model_outputs.
        if (!(err instanceof ModelProviderError && err.code === 'invalid_output')) throw err;
        invalidOutputs++;
        pred = 'NOT_FOUND';
      }
      rows.push({ gold: ex.gold, pred });
      if ((i + 1) % 200 === 0) process.stderr.write(`judged ${i + 1}/${set.examples.length}\n`);
    }
    const majority = VERDICTS.map((v) => ({ v, n: rows.filter((r) => r.gold === v).length })).sort((a, b) => b.n - a.n)[0].v;
    const result = {
      dataset: set.name,
      judge: judge.model,
      top_k: topK,
      documents: set.docs.length,
      chunks,
      ...verdictMetrics(rows),
      majority_baseline: { verdict: majority, ...pick(verdictMetrics(rows.map((r) => ({ gold: r.gold, pred: majority }))), ['accuracy', 'macro_f1']) },
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

function pick<T extends object, K extends keyof T>(o: T, keys: K[]): Pick<T, K> {
  return Object.fromEntries(keys.map((k) => [k, o[k]])) as Pick<T, K>;
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${err?.stack ?? err}\n`);
    process.exit(1);
  });
}
