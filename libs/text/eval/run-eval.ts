/**
 * Evaluation of the heuristic judge of before issue 13 (and the extractive answerer's evidence recall) on labelled data:
 * SciFact train (claims vs the abstracts they cite) and ContractNLI dev (hypotheses vs NDAs).
 *
 * Run from the repository root:  bash libs/text/eval/run.sh [--dataset scifact|contractnli|all] [--limit N] [--grid]
 * Data is read from ../shared/datasets (or $KB_DATASETS); see that folder's README for the label mapping.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { analyze } from '../src/analyze';
import { composeExtractiveAnswer } from '../src/answer';
import { DEFAULT_JUDGE_PARAMS, judgeRequirementWith, type JudgeParams } from '../src/heuristic-judge';
import type { Verdict } from '../src/judge';
import type { PassageInput } from '../src/types';

const VERDICTS: Verdict[] = ['COMPLIANT', 'CONTRADICTS', 'NOT_FOUND'];

interface Example {
  id: string;
  requirement: string;
  passages: PassageInput[];
  gold: Verdict;
  /** Gold evidence sentences (SciFact) for the answerer's recall. */
  rationales?: string[];
}

const root = path.resolve(__dirname, '../../../../..');
const dataDir = process.env.KB_DATASETS ?? path.resolve(fs.existsSync(path.join(root, 'libs')) ? root : process.cwd(), '../shared/datasets');

function passage(id: string, docId: string, fileName: string, text: string, score: number): PassageInput {
  return { chunkId: id, documentId: docId, fileName, text, startPage: null, endPage: null, pageSpans: [], score };
}

function loadSciFact(): Example[] {
  const corpus = new Map<number, { title: string; abstract: string[] }>();
  for (const line of fs.readFileSync(path.join(dataDir, 'scifact/corpus.jsonl'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const d = JSON.parse(line);
    corpus.set(d.doc_id, { title: d.title, abstract: d.abstract });
  }
  const out: Example[] = [];
  for (const line of fs.readFileSync(path.join(dataDir, 'scifact/claims_train.jsonl'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const c = JSON.parse(line);
    const labels = new Set<string>();
    const rationales: string[] = [];
    for (const [docId, sets] of Object.entries(c.evidence as Record<string, { sentences: number[]; label: string }[]>)) {
      for (const s of sets) {
        labels.add(s.label);
        for (const i of s.sentences) rationales.push(corpus.get(Number(docId))?.abstract[i] ?? '');
      }
    }
    const gold: Verdict = labels.size === 0 ? 'NOT_FOUND' : labels.has('CONTRADICT') ? 'CONTRADICTS' : 'COMPLIANT';
    const passages = (c.cited_doc_ids as number[])
      .filter((id) => corpus.has(id))
      .map((id) => {
        const d = corpus.get(id)!;
        return passage(`scifact-${id}`, String(id), `${id}.txt`, `${d.title}\n${d.abstract.join(' ')}`, 1);
      });
    out.push({ id: `scifact-${c.id}`, requirement: c.claim, passages, gold, rationales });
  }
  return out;
}

/** Cuts a document into passages of about `size` characters at line, then sentence-ish, then space boundaries. */
function chunk(text: string, size = 1200): { text: string; start: number }[] {
  const out: { text: string; start: number }[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + size);
    if (end < text.length) {
      const window = text.slice(start, end);
      const cut = Math.max(window.lastIndexOf('\n'), window.lastIndexOf('. '));
      if (cut > size * 0.5) end = start + cut + 1;
      else {
        const sp = window.lastIndexOf(' ');
        if (sp > size * 0.5) end = start + sp + 1;
      }
    }
    out.push({ text: text.slice(start, end), start });
    start = end;
  }
  return out;
}

/** Okapi BM25 (k1 = 1.2, b = 0.75) of a query against the chunks of one document: our stand-in for retrieval. */
function bm25(query: string, docs: string[][]): number[] {
  const q = [...new Set(analyze(query))];
  const n = docs.length;
  const avg = docs.reduce((s, d) => s + d.length, 0) / Math.max(1, n);
  const df = new Map<string, number>();
  for (const d of docs) for (const t of new Set(d)) df.set(t, (df.get(t) ?? 0) + 1);
  return docs.map((d) => {
    const tf = new Map<string, number>();
    for (const t of d) tf.set(t, (tf.get(t) ?? 0) + 1);
    let s = 0;
    for (const t of q) {
      const f = tf.get(t) ?? 0;
      if (!f) continue;
      const idf = Math.log(1 + (n - (df.get(t) ?? 0) + 0.5) / ((df.get(t) ?? 0) + 0.5));
      s += (idf * f * 2.2) / (f + 1.2 * (1 - 0.75 + (0.75 * d.length) / avg));
    }
    return s;
  });
}

function loadContractNli(): Example[] {
  const data = JSON.parse(fs.readFileSync(path.join(dataDir, 'contractnli/dev.json'), 'utf8'));
  const out: Example[] = [];
  const map: Record<string, Verdict> = { Entailment: 'COMPLIANT', Contradiction: 'CONTRADICTS', NotMentioned: 'NOT_FOUND' };
  for (const doc of data.documents) {
    const chunks = chunk(doc.text);
    const analysed = chunks.map((c) => analyze(c.text));
    for (const [key, ann] of Object.entries(doc.annotation_sets[0].annotations as Record<string, { choice: string }>)) {
      const hypothesis: string = data.labels[key].hypothesis;
      const scores = bm25(hypothesis, analysed);
      const top = scores
        .map((s, i) => ({ s, i }))
        .sort((a, b) => b.s - a.s)
        .slice(0, 8)
        .map(({ s, i }) => passage(`nda-${doc.id}-${i}`, String(doc.id), doc.file_name ?? `nda-${doc.id}`, chunks[i].text, s));
      out.push({ id: `cnli-${doc.id}-${key}`, requirement: hypothesis, passages: top, gold: map[ann.choice] });
    }
  }
  return out;
}

interface Scored {
  ex: Example;
  pred: Verdict;
  confidence: number;
}

function metrics(rows: Scored[]) {
  const cm: Record<Verdict, Record<Verdict, number>> = Object.fromEntries(VERDICTS.map((g) => [g, Object.fromEntries(VERDICTS.map((p) => [p, 0]))])) as never;
  for (const r of rows) cm[r.ex.gold][r.pred]++;
  const perClass = VERDICTS.map((v) => {
    const tp = cm[v][v];
    const fp = VERDICTS.reduce((s, g) => s + (g === v ? 0 : cm[g][v]), 0);
    const fn = VERDICTS.reduce((s, p) => s + (p === v ? 0 : cm[v][p]), 0);
    const p = tp + fp ? tp / (tp + fp) : 0;
    const r = tp + fn ? tp / (tp + fn) : 0;
    return { verdict: v, precision: p, recall: r, f1: p + r ? (2 * p * r) / (p + r) : 0, support: tp + fn };
  });
  const accuracy = rows.filter((r) => r.pred === r.ex.gold).length / Math.max(1, rows.length);
  const macroF1 = perClass.reduce((s, c) => s + c.f1, 0) / perClass.length;
  const hi = rows.filter((r) => r.confidence >= 0.7);
  const lo = rows.filter((r) => r.confidence < 0.7);
  const acc = (xs: Scored[]) => (xs.length ? xs.filter((r) => r.pred === r.ex.gold).length / xs.length : NaN);
  // Expected calibration error over 10 confidence bins.
  let ece = 0;
  for (let b = 0; b < 10; b++) {
    const bin = rows.filter((r) => Math.min(9, Math.floor(r.confidence * 10)) === b);
    if (!bin.length) continue;
    const meanConf = bin.reduce((s, r) => s + r.confidence, 0) / bin.length;
    ece += (bin.length / rows.length) * Math.abs(meanConf - acc(bin));
  }
  return { n: rows.length, accuracy, macroF1, perClass, cm, calibration: { highN: hi.length, highAcc: acc(hi), lowN: lo.length, lowAcc: acc(lo), ece } };
}

const f = (x: number) => (Number.isNaN(x) ? '  -  ' : x.toFixed(3));

function report(name: string, rows: Scored[]) {
  const m = metrics(rows);
  console.log(`\n== ${name}: n=${m.n}  accuracy=${f(m.accuracy)}  macro-F1=${f(m.macroF1)}`);
  for (const c of m.perClass) console.log(`   ${c.verdict.padEnd(12)} P=${f(c.precision)} R=${f(c.recall)} F1=${f(c.f1)} support=${c.support}`);
  console.log(`   confusion (rows gold, columns predicted: ${VERDICTS.join(' / ')})`);
  for (const g of VERDICTS) console.log(`   ${g.padEnd(12)} ${VERDICTS.map((p) => String(m.cm[g][p]).padStart(6)).join('')}`);
  const c = m.calibration;
  console.log(`   confidence >= 0.7: n=${c.highN} accuracy=${f(c.highAcc)};  < 0.7: n=${c.lowN} accuracy=${f(c.lowAcc)};  ECE=${f(c.ece)}`);
  return m;
}

function run(examples: Example[], params: JudgeParams): Scored[] {
  return examples.map((ex) => {
    const j = judgeRequirementWith(ex.requirement, ex.passages, params);
    return { ex, pred: j.verdict, confidence: j.confidence };
  });
}

/** Share of SciFact claims with evidence whose extractive answer quotes at least one gold rationale sentence. */
function answerRecall(examples: Example[]): { n: number; recall: number } {
  const withEvidence = examples.filter((e) => e.rationales && e.rationales.length);
  const norm = (s: string) => s.replace(/\s+/g, ' ').trim();
  let hits = 0;
  for (const ex of withEvidence) {
    const a = composeExtractiveAnswer(ex.requirement, ex.passages, { maxSentences: 3 });
    const gold = ex.rationales!.map(norm);
    if (a.citations.some((c) => gold.some((g) => g.includes(norm(c.quote.quote)) || norm(c.quote.quote).includes(g)))) hits++;
  }
  return { n: withEvidence.length, recall: hits / Math.max(1, withEvidence.length) };
}

function main() {
  const args = process.argv.slice(2);
  const dataset = args.includes('--dataset') ? args[args.indexOf('--dataset') + 1] : 'all';
  const limit = args.includes('--limit') ? Number(args[args.indexOf('--limit') + 1]) : Infinity;
  const sets: [string, Example[]][] = [];
  if (dataset === 'all' || dataset === 'scifact') sets.push(['SciFact train', loadSciFact().slice(0, limit)]);
  if (dataset === 'all' || dataset === 'contractnli') sets.push(['ContractNLI dev', loadContractNli().slice(0, limit)]);
  if (args.includes('--grid')) {
    const grid: Partial<JudgeParams>[] = [];
    for (const notFoundCoverage of [0.3, 0.35, 0.4, 0.45, 0.5]) for (const candidates of [1, 3]) grid.push({ notFoundCoverage, candidates });
    for (const topicContradictionCoverage of [0.3, 0.5, 1.01]) grid.push({ topicContradictionCoverage });
    // ablations of the contradiction signals at the default constants
    grid.push({ polarity: false }, { antonyms: false }, { quantities: false }, { polarity: false, antonyms: false, quantities: false });
    for (const g of grid) {
      const params = { ...DEFAULT_JUDGE_PARAMS, ...g };
      const parts = sets.map(([name, ex]) => {
        const m = metrics(run(ex, params));
        return `${name}: acc=${f(m.accuracy)} F1=${f(m.macroF1)}`;
      });
      console.log(JSON.stringify(g), parts.join(' | '));
    }
    return;
  }
  console.log(`params: ${JSON.stringify(DEFAULT_JUDGE_PARAMS)}`);
  for (const [name, ex] of sets) {
    const t0 = Date.now();
    const rows = run(ex, DEFAULT_JUDGE_PARAMS);
    report(name, rows);
    console.log(`   ${((Date.now() - t0) / ex.length).toFixed(1)} ms per requirement`);
    if (name.startsWith('SciFact')) {
      const r = answerRecall(ex);
      console.log(`   extractive answer (claim as question): quotes a gold rationale sentence for ${f(r.recall)} of ${r.n} claims with evidence`);
    }
  }
  if (args.includes('--dump')) {
    const out = args[args.indexOf('--dump') + 1];
    const lines = sets.flatMap(([, ex]) =>
      ex.map((e) => {
        const j = judgeRequirementWith(e.requirement, e.passages, DEFAULT_JUDGE_PARAMS);
        return JSON.stringify({
          id: e.id,
          gold: e.gold,
          pred: j.verdict,
          confidence: j.confidence,
          requirement: e.requirement,
          evidence: j.evidence?.quote ?? null,
          explanation: j.explanation,
        });
      }),
    );
    fs.writeFileSync(out, lines.join('\n') + '\n');
  }
}

main();
