/**
 * `npm run eval:controls`: the check-run path on real requirements (issue 27). Control frameworks are
 * checked against the procedures that implement them (`../shared/datasets/controls`, README there):
 * every procedure is a document of one project (org-level documents of an organization), each framework
 * requirement is one requirement of a check run, processed exactly as the run worker processes it
 * (`checkRequirement`: breakdown, then each sub-requirement assessed with the Assessor: retrieval of the
 * requirement's core statement through the retrieval service's own hybrid search, then the configured judge).
 * The same requirements are checked again against unrelated documents (the negative control: construction
 * and safety documents by default). Prints one JSON object on stdout (progress on stderr).
 *
 *   npm run eval:controls -- [--dataset DIR] [--split report|fit|train|all] [--framework NAME]… [--limit N]
 *     [--skip-breakdown] [--without-title] [--negative FILE]… [--index-dir DIR] [--no-negative]
 *     [--dump-features FILE [--unrelated-only]] [--dump-units FILE] [--details FILE]
 *     [--standard FILE]… [--library FILE|DIR]… [--mapping listed|stated]
 *
 * Splits, by framework family (requirements reworded between editions stay on one side): `train` (the
 * requirement-satisfaction model is trained on these: NIST SP 800-53 / FedRAMP High, CIS Controls v8, CSA CCM
 * 3.0.1, CMMC ML1), `fit` (the judge's verdict model and its calibration are fitted on these: ISO/IEC 27001:2013,
 * 27001:2022, 27002:2013) and `report` (everything else: NIST CSF 1.1 and 2.0, PCI DSS 3.2.1 and SAQ-A, and any
 * framework file not named in {@link FRAMEWORK_SPLITS}, so a held-out set of the same layout is reported).
 *
 * Figures per framework, per split and overall (requirements with at least one mapped procedure, "mapped"):
 * - `pass_rate`: share of mapped requirements that pass (every sub-requirement COMPLIANT);
 * - `first_source_mapped`: share of mapped requirements whose first source (the first source of the first
 *   sub-requirement that has one) is a mapped procedure; `first_source_mapped_of_passed` the same among passes;
 * - `confident`: a requirement's confidence is the lowest sub-requirement score when it passes, else the
 *   highest score among its failing sub-requirements (the verdict that makes it fail); `coverage` = share of
 *   mapped requirements with confidence ≥ 0.7, `precision` = share of those that pass (right: the procedures
 *   implement them); each framework is one check run, so verdicts and scores are those of the completed run, after
 *   its run-level reading (run-corroboration.ts; `runs` per framework gives each run's pass share over all its
 *   requirements, mapped or not, its reading and how many sub-requirements it raised or doubted);
 *   `confident_single_verdicts` and `pass_rate_single_verdicts` the same before it;
 * - `negative_control`: the same mapped requirements against the unrelated documents (every requirement of the
 *   framework is checked there, as one run): `pass_rate`, `confident_passes` (must be 0) and `confident_wrong`
 *   (confident CONTRADICTS against unrelated text, must be 0);
 * - `unmapped_pass_rate`: requirements no procedure implements, against the procedures (for information:
 *   the mapping is per document and incomplete, so these are not labelled NOT_FOUND).
 *
 * **Other requirement lists and other companies' documents.** `--standard FILE` (repeatable) checks the requirements of
 * framework files of the same format from elsewhere instead of the dataset's (each is reported as a held-out
 * framework), `--library PATH` (repeatable, a file or a folder) checks against those documents instead of the
 * dataset's procedures, and `--mapping stated` takes a requirement's implementing documents from the documents
 * themselves: those whose text names the requirement's `ref` (a policy that lists "164.312(a)(2)(iii) Automatic
 * Logoff" among the HIPAA standards it implements; {@link statedMapping}) instead of the framework's `mappedControls`.
 * The shared data's held-out test material is of that kind (`../shared/datasets/README.md`: the HIPAA list of
 * `../shared/corpus/json` against the procedures, and against the Datica policies of `../shared/corpus/markdown`,
 * which state what they implement): report on it, never tune on it.
 *
 * `--dump-features FILE` writes the embedded judge's signals of each mapped requirement (whole, no breakdown)
 * against the procedures (gold COMPLIANT) and against the unrelated documents (gold NOT_FOUND), for
 * `npm run train:judge` (with `--unrelated-only`, only the rows against the unrelated documents, split `<split>-unrelated`:
 * train_judge.py checks the confidence threshold on them and never fits on them); `--dump-units FILE` writes the evidence units of each mapped requirement's procedures
 * and of the passages retrieval ranks highest, for `npm run train:rsm`.
 */
import pino from 'pino';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { contentTypeForFile, loadConfig, sharedEnv } from '@kb/common';
import { chatModelEnv } from '@kb/models';
import { passageOf } from '@kb/knowledge';
import {
  rankUnits,
  readRequirement,
  requirementTitle,
  requirementWithTitle,
  semanticCandidates,
  sentenceUnits,
  unitKey,
  unitModelText,
  type PassageInput,
} from '@kb/text';
import { storedChunksOf } from './stored-chunks';
import { openRetrieval, retrievalConfigFromEnv } from '../../apps/retrieval/src/retrieval-factory';
import type { RetrievalService } from '../../apps/retrieval/src/search/retrieval.service';
import { checkRequirement } from '../../apps/check/src/runs/run-worker';
import { readRun, type CorroborationSub } from '../../apps/check/src/runs/run-corroboration';
import { Assessor, VERIFY_TOP_K, type EvidenceSearch } from '../../apps/check/src/verification/assessor';
import { createJudge, openNliModel, openRsmModel } from '../../apps/check/src/verification/create-judge';
import { EmbeddedJudge, embedByLength, type RequirementJudge } from '../../apps/check/src/verification/judges';

export type ControlsSplit = 'train' | 'fit' | 'report';

/** Split of each framework file of the shared data (basename without `.json`); any other framework is `report`. */
export const FRAMEWORK_SPLITS: Record<string, Exclude<ControlsSplit, 'report'>> = {
  'fedramp-high-nist-800-53r4': 'train',
  'cis-controls-v8': 'train',
  'csa-ccm-3.0.1': 'train',
  'cmmc-ml1': 'train',
  'iso-iec-27001-2013': 'fit',
  'iso-iec-27001-2022': 'fit',
  'iso-iec-27002-2013': 'fit',
};

/** Split of a framework file (see {@link FRAMEWORK_SPLITS}). */
export const splitOfFramework = (framework: string): ControlsSplit => FRAMEWORK_SPLITS[framework] ?? 'report';

/** One requirement of a framework with the procedures mapped to it. */
export interface ControlRequirement {
  id: string;
  framework: string;
  ref: string;
  title: string | null;
  /** The section or domain it stands in (the README's "family" of requirements). */
  section: string | null;
  text: string;
  mapped: string[];
}

/** A document of the evaluation: an id (the procedure's file name without `.md`), a file and its content type. */
export interface EvalDocument {
  id: string;
  file: string;
  contentType: string;
}

/**
 * The requirements of one framework file: `sections[].requirements[]` or `domains[].controls[]`. `text` is the
 * requirement as the run worker reads one sent with the framework's title as `metadata.title` (the workspace's
 * Title column, the CLI's "title" column): `title: summary` ({@link requirementWithTitle}); the summary alone
 * when the requirement has no title or `withTitle` is false (`--without-title`).
 */
export function loadFramework(file: string, withTitle = true): ControlRequirement[] {
  const data = JSON.parse(readFileSync(file, 'utf8'));
  const framework = path.basename(file, '.json');
  const out: ControlRequirement[] = [];
  for (const group of [...(data.sections ?? []), ...(data.domains ?? [])]) {
    for (const r of [...(group.requirements ?? []), ...(group.controls ?? [])]) {
      const summary = String(r.summary ?? '').trim();
      const title = r.title ? String(r.title).replace(/\s+/g, ' ').trim() : null;
      const text = summary ? requirementWithTitle(summary, withTitle ? { title } : null) : title || '';
      if (!text) continue;
      out.push({
        id: `${framework}:${r.ref}`,
        framework,
        ref: String(r.ref),
        title,
        section: group.title ?? null,
        text,
        mapped: (r.mappedControls ?? []).map(String),
      });
    }
  }
  return out;
}

/** The files of a folder of an accepted content type (by extension, DOCUMENT_FORMATS), as documents whose id is the file name without extension. */
export function documentsIn(dir: string): EvalDocument[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .flatMap((f) => {
      const contentType = contentTypeForFile(f);
      return contentType ? [{ id: path.basename(f, path.extname(f)), file: path.join(dir, f), contentType }] : [];
    });
}

/** The documents of `--library PATH`: a folder's ({@link documentsIn}) or one file. @throws Error for a missing path or a file of no accepted type. */
export function documentsAt(file: string): EvalDocument[] {
  if (!existsSync(file)) throw new Error(`--library ${file}: no such file or folder`);
  if (statSync(file).isDirectory()) return documentsIn(file);
  const contentType = contentTypeForFile(file);
  if (!contentType) throw new Error(`--library ${file}: not a file type the service accepts`);
  return [{ id: path.basename(file, path.extname(file)), file, contentType }];
}

/** Each document's text as the service reads it (ingestion's extractor and chunker: section titles, then chunk texts), by document id. */
export async function documentTexts(docs: EvalDocument[]): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  for (const d of docs) {
    const chunks = await storedChunksOf(d.file, d.contentType, { orgId: LIBRARY_ORG, documentId: uuidOf(d.id), fileName: path.basename(d.file) }, (i) =>
      uuidOf(`${d.id}:${i}`),
    );
    texts.set(d.id, chunks.map((c) => [...c.headingPath, c.text].join('\n')).join('\n'));
  }
  return texts;
}

/**
 * The requirements with their implementing documents taken from what the documents state (`--mapping stated`): a
 * document implements a requirement when its text names the requirement's `ref` as a whole reference, not as the
 * start of a longer one ("164.308(a)(1)(ii)(D)" is not named by "164.308(a)(1)(ii)(D)(2)", nor "164.308(a)(1)(i)" by
 * "164.308(a)(1)(ii)"). The framework's own `mappedControls` are replaced (they name another library's documents).
 * @param texts document id → text ({@link documentTexts})
 */
export function statedMapping(requirements: ControlRequirement[], texts: Map<string, string>): ControlRequirement[] {
  return requirements.map((r) => {
    const named = new RegExp(`(?<![\\w.(])${r.ref.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w(])`);
    return { ...r, mapped: [...texts].filter(([, text]) => named.test(text)).map(([id]) => id) };
  });
}

/** Unrelated documents of the negative control: construction and safety documents of this repository and of ../shared/corpus. */
export function defaultNegativeDocuments(root: string): EvalDocument[] {
  const corpus = path.join(root, '../shared/corpus');
  const files = [
    ...documentsIn(path.join(root, 'samples/safety-corpus')).map((d) => d.file),
    path.join(corpus, 'pdf/OSHA2001.pdf'),
    ...['First_Aid', 'More_Details', 'Signs_and_Symptoms', 'precautions_high', 'precautions_veryhigh'].map((n) =>
      path.join(corpus, `html/osha_heat_app_${n}.html`),
    ),
  ];
  return files
    .filter((f) => existsSync(f))
    .map((f) => ({ id: path.basename(f, path.extname(f)), file: f, contentType: contentTypeForFile(f) ?? 'text/plain' }));
}

/** Stable UUID-shaped id (SHA-1, RFC 4122 §4.3 layout) of a document of one org of the evaluation. */
const uuidOf = (key: string) => {
  const h = createHash('sha1').update(`eval-controls:${key}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16], 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
};

const LIBRARY_ORG = 'a0e1c0de-0000-5000-8000-0000000c0001';
const NEGATIVE_ORG = 'a0e1c0de-0000-5000-8000-0000000c0002';
const PROJECT = 'a0e1c0de-0000-5000-8000-0000000c0003';

/** Extracts, chunks, indexes and embeds documents into `orgId` with the services' own code; returns chunks per document id. */
async function indexDocuments(service: RetrievalService, orgId: string, docs: EvalDocument[]): Promise<number> {
  let chunks = 0;
  for (const d of docs) {
    const documentId = uuidOf(`${orgId}:${d.id}`);
    const stored = await storedChunksOf(d.file, d.contentType, { orgId, documentId, fileName: path.basename(d.file) }, (index) =>
      uuidOf(`${orgId}:${d.id}:${index}`),
    );
    await service.indexDocument(orgId, documentId, stored);
    await service.embedDocument(orgId, documentId);
    chunks += stored.length;
  }
  return chunks;
}

/** {@link EvidenceSearch} over the retrieval service in this process (every indexed document is live). */
function inProcessSearch(service: RetrievalService): EvidenceSearch {
  return {
    search: async (ctx, query, scope, topK) =>
      (await service.search(query, { orgId: ctx.orgId, documentIds: scope.documentIds }, topK)).hits.map((h) => passageOf(h.chunk, h.score)),
    live: async (_ctx, ids) => new Set(ids),
  };
}

interface Args {
  dataset: string;
  split: ControlsSplit | 'all';
  frameworks: string[];
  limit: number;
  skipBreakdown: boolean;
  withTitle: boolean;
  negative: string[];
  noNegative: boolean;
  indexDir?: string;
  dumpFeatures?: string;
  unrelatedOnly: boolean;
  dumpUnits?: string;
  details?: string;
  standards: string[];
  library: string[];
  mapping: 'listed' | 'stated';
}

function parse(argv: string[]): Args {
  const all = (flag: string) => argv.flatMap((a, i) => (a === flag && argv[i + 1] ? [argv[i + 1]] : []));
  const one = (flag: string) => all(flag).pop();
  const root = path.resolve(__dirname, '../../..');
  const split = (one('--split') ?? 'report') as Args['split'];
  const mapping = (one('--mapping') ?? 'listed') as Args['mapping'];
  if (!['train', 'fit', 'report', 'all'].includes(split) || !['listed', 'stated'].includes(mapping)) {
    process.stderr.write(
      'usage: npm run eval:controls -- [--dataset DIR] [--split report|fit|train|all] [--framework NAME]… [--limit N] [--skip-breakdown] [--without-title] [--negative FILE]… [--no-negative] [--index-dir DIR] [--dump-features FILE [--unrelated-only]] [--dump-units FILE] [--details FILE] [--standard FILE]… [--library FILE|DIR]… [--mapping listed|stated]\n',
    );
    process.exit(2);
  }
  return {
    dataset: path.resolve(one('--dataset') ?? path.join(root, '../shared/datasets/controls')),
    split,
    frameworks: all('--framework'),
    limit: Number(one('--limit') ?? Infinity),
    skipBreakdown: argv.includes('--skip-breakdown'),
    withTitle: !argv.includes('--without-title'),
    negative: all('--negative'),
    noNegative: argv.includes('--no-negative'),
    indexDir: one('--index-dir'),
    dumpFeatures: one('--dump-features'),
    unrelatedOnly: argv.includes('--unrelated-only'),
    dumpUnits: one('--dump-units'),
    details: one('--details'),
    standards: all('--standard').map((f) => path.resolve(f)),
    library: all('--library').map((f) => path.resolve(f)),
    mapping,
  };
}

/** The outcome of one requirement through the check-run path. */
interface Outcome {
  /** After the run's run-level reading (run-corroboration.ts), as the run shows it once completed. */
  passed: boolean;
  /** The same from the single verdicts. */
  singlePassed: boolean;
  /** See the module comment ("confident"): after the run's corroboration (run-corroboration.ts), as the run shows it once completed. */
  confidence: number;
  /** The same from the single verdicts, before corroboration. */
  singleConfidence: number;
  /** Sub-requirements as corroboration reads them. */
  subs: CorroborationSub[];
  firstSource: string | null;
  /** The justification (explanation and quote) of the first sub-requirement with a source, for `--details`. */
  justification: string | null;
  parts: number;
  verdicts: string[];
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;

/** Figures of a list of mapped requirements (see the module comment). */
function figures(rows: { req: ControlRequirement; library: Outcome; negative: Outcome | null }[]) {
  const n = rows.length;
  const share = (k: number, of = n) => (of ? r3(k / of) : null);
  const passed = rows.filter((r) => r.library.passed);
  const firstMapped = (r: (typeof rows)[number]) => r.library.firstSource !== null && r.req.mapped.includes(r.library.firstSource);
  const confident = rows.filter((r) => r.library.confidence >= 0.7);
  const singlePassed = rows.filter((r) => r.library.singlePassed);
  const confidentSingle = rows.filter((r) => r.library.singleConfidence >= 0.7);
  const neg = rows.filter((r) => r.negative);
  return {
    mapped_requirements: n,
    pass_rate: share(passed.length),
    pass_rate_single_verdicts: share(singlePassed.length),
    first_source_mapped: share(rows.filter(firstMapped).length),
    first_source_mapped_of_passed: share(passed.filter(firstMapped).length, passed.length),
    confident: { n: confident.length, coverage: share(confident.length), precision: share(confident.filter((r) => r.library.passed).length, confident.length) },
    confident_single_verdicts: {
      n: confidentSingle.length,
      coverage: share(confidentSingle.length),
      precision: share(confidentSingle.filter((r) => r.library.singlePassed).length, confidentSingle.length),
    },
    negative_control: neg.length
      ? {
          requirements: neg.length,
          pass_rate: share(neg.filter((r) => r.negative!.passed).length, neg.length),
          pass_rate_single_verdicts: share(neg.filter((r) => r.negative!.singlePassed).length, neg.length),
          confident_passes: neg.filter((r) => r.negative!.passed && r.negative!.confidence >= 0.7).length,
          confident_wrong: neg.filter((r) => r.negative!.confidence >= 0.7 && r.negative!.verdicts.some((v) => v === 'CONTRADICTS')).length,
        }
      : null,
    sub_requirements_per_requirement: n ? r3(rows.reduce((s, r) => s + r.library.parts, 0) / n) : null,
  };
}

async function main() {
  const a = parse(process.argv.slice(2));
  const root = path.resolve(__dirname, '../../..');
  const logger = pino(
    { base: { service: 'eval-controls' }, level: loadConfig({ LOG_LEVEL: sharedEnv.logging.LOG_LEVEL.removeDefault().default('warn') }).LOG_LEVEL },
    pino.destination({ dest: 2, sync: true }),
  );
  const frameworkFiles = a.standards.length
    ? a.standards
    : readdirSync(path.join(a.dataset, 'standards'))
        .filter((f) => f.endsWith('.json'))
        .sort()
        .map((f) => path.join(a.dataset, 'standards', f))
        .filter((f) =>
          a.frameworks.length ? a.frameworks.includes(path.basename(f, '.json')) : a.split === 'all' || splitOfFramework(path.basename(f, '.json')) === a.split,
        );
  let requirements = frameworkFiles.flatMap((f) => loadFramework(f, a.withTitle));
  const library = a.library.length ? a.library.flatMap(documentsAt) : documentsIn(path.join(a.dataset, 'procedures'));
  if (a.mapping === 'stated') requirements = statedMapping(requirements, await documentTexts(library));
  const libraryIds = new Set(library.map((d) => d.id));
  const negatives = a.noNegative
    ? []
    : a.negative.length
      ? a.negative.map((f) => ({ id: path.basename(f, path.extname(f)), file: path.resolve(f), contentType: contentTypeForFile(f) ?? 'text/plain' }))
      : defaultNegativeDocuments(root);

  const work = mkdtempSync(path.join(os.tmpdir(), 'kb-eval-controls-'));
  const dir = a.indexDir ? path.resolve(a.indexDir) : path.join(work, 'index');
  mkdirSync(dir, { recursive: true });
  const retrieval = await openRetrieval(retrievalConfigFromEnv({ ...process.env, RETRIEVAL_DATA_DIR: dir }), { lance: { optimizeDelayMs: 0 } });
  const service = retrieval.service;
  const embeddings = service.embeddingModel();
  const fingerprint = JSON.stringify({ library: library.map((d) => d.file), negatives: negatives.map((d) => d.file), space: service.denseState() });
  const marker = path.join(dir, 'eval-controls-index.json');
  let chunks: { library: number; negative: number };
  const t0 = Date.now();
  if (a.indexDir && existsSync(marker) && JSON.parse(readFileSync(marker, 'utf8')).fingerprint === fingerprint) {
    chunks = JSON.parse(readFileSync(marker, 'utf8')).chunks;
    process.stderr.write(`reusing the index in ${dir}\n`);
  } else {
    process.stderr.write(`indexing ${library.length} procedures and ${negatives.length} unrelated documents\n`);
    chunks = { library: await indexDocuments(service, LIBRARY_ORG, library), negative: await indexDocuments(service, NEGATIVE_ORG, negatives) };
    await retrieval.store.optimize?.();
    if (a.indexDir) writeFileSync(marker, JSON.stringify({ fingerprint, chunks }));
  }
  const ingestMs = Date.now() - t0;
  const docIdOf = new Map<string, string>();
  for (const d of library) docIdOf.set(uuidOf(`${LIBRARY_ORG}:${d.id}`), d.id);
  for (const d of negatives) docIdOf.set(uuidOf(`${NEGATIVE_ORG}:${d.id}`), d.id);

  const nli = await openNliModel(process.env.JUDGE_NLI_MODEL_DIR ?? '', embeddings, !!a.dumpFeatures);
  const rsm = await openRsmModel(process.env.JUDGE_RSM_MODEL_DIR ?? '', embeddings, !!a.dumpFeatures);
  const judge: RequirementJudge = process.env.LLM_BASE_URL
    ? createJudge(loadConfig(chatModelEnv, process.env), logger, embeddings, nli.model, rsm.model)
    : new EmbeddedJudge(embeddings, undefined, logger, nli.model, rsm.model);
  const search = inProcessSearch(service);
  const assessor = new Assessor(search, judge);
  const scope = { projectId: PROJECT, documentIds: [] };

  const outcome = async (orgId: string, r: ControlRequirement): Promise<Outcome> => {
    // As the run worker checks a requirement sent with metadata.title (r.text is already `title: summary`: joining again changes nothing).
    const title = a.withTitle ? requirementTitle({ title: r.title }) : null;
    const { subs, passed } = await checkRequirement({ judge, assessor }, { orgId, requestId: randomUUID() }, scope, r.text, {
      skipBreakdown: a.skipBreakdown,
      title,
    });
    const confidence = requirementConfidence(passed, subs);
    const sourced = subs.find((s) => s.sources.length > 0);
    const first = sourced?.sources[0]?.handbook_id ?? null;
    return {
      passed,
      singlePassed: passed,
      confidence,
      singleConfidence: confidence,
      subs: subs.map((s) => ({ verdict: s.verdict, judgeScore: s.score, pCompliant: s.pCompliant, raisable: s.corroboratedJustification !== null })),
      firstSource: first ? (docIdOf.get(first) ?? first) : null,
      justification: sourced?.justification ?? null,
      parts: subs.length,
      verdicts: subs.map((s) => s.verdict),
    };
  };

  const mappedOf = (r: ControlRequirement) => r.mapped.filter((m) => libraryIds.has(m));
  const byFramework = new Map<string, ControlRequirement[]>();
  for (const r of requirements) byFramework.set(r.framework, [...(byFramework.get(r.framework) ?? []), r]);
  const selected = [...byFramework.values()].flatMap((rs) => rs.slice(0, a.limit));
  process.stderr.write(
    `${selected.length} requirements of ${byFramework.size} frameworks (split ${a.split}); ${chunks.library} + ${chunks.negative} chunks (${ingestMs} ms); judge ${judge.model}` +
      `${embeddings ? ` + embeddings ${embeddings.model}` : ' (no embedding model)'}${nli.model ? ` + ${nli.model.name}` : ''}${rsm.model ? ` + ${rsm.model.name}` : ''}\n`,
  );

  try {
    if (a.dumpFeatures) {
      if (!(judge instanceof EmbeddedJudge)) throw new Error('--dump-features needs the embedded judge (unset LLM_BASE_URL)');
      const lines: string[] = [];
      for (const [i, r] of selected.filter((x) => mappedOf(x).length).entries()) {
        const core = readRequirement(r.text).core;
        for (const [orgId, gold] of [
          [LIBRARY_ORG, 'COMPLIANT'],
          [NEGATIVE_ORG, 'NOT_FOUND'],
        ] as const) {
          if (orgId === NEGATIVE_ORG && negatives.length === 0) continue;
          if (orgId === LIBRARY_ORG && a.unrelatedOnly) continue;
          const passages = await search.search({ orgId, requestId: 'dump' }, core, scope, VERIFY_TOP_K);
          const s = await judge.signals(r.text, passages);
          const split = splitOfFramework(r.framework) + (a.unrelatedOnly ? '-unrelated' : '');
          const id = `${r.id}:${gold}${a.unrelatedOnly ? ':unrelated-only' : ''}`;
          lines.push(
            JSON.stringify({
              id,
              dataset: 'controls',
              framework: r.framework,
              split,
              group: groupOf(r),
              gold,
              lexical: s.lexical,
              semantic: s.semantic,
              nli: s.nli,
              nli_scores: s.nliScores,
              rsm: s.rsm,
              rsm_scores: s.rsmScores,
            }),
          );
        }
        if ((i + 1) % 100 === 0) process.stderr.write(`signals ${i + 1}\n`);
      }
      writeFileSync(a.dumpFeatures, lines.join('\n') + '\n');
      process.stdout.write(`${JSON.stringify({ signals: lines.length, file: a.dumpFeatures })}\n`);
      return;
    }
    if (a.dumpUnits) {
      await dumpUnits(
        a.dumpUnits,
        selected.filter((x) => mappedOf(x).length),
        service,
        embeddings,
        docIdOf,
        (r) => mappedOf(r),
      );
      return;
    }

    const rows: { req: ControlRequirement; library: Outcome; negative: Outcome | null }[] = [];
    const unmapped: { req: ControlRequirement; library: Outcome; negative: Outcome | null }[] = [];
    const t1 = Date.now();
    for (const [i, r] of selected.entries()) {
      const lib = await outcome(LIBRARY_ORG, r);
      // Every requirement of a framework is checked against the unrelated documents too: the negative run is a
      // whole run, as a user would make it, so its pass share is the one the run's corroboration reads.
      const negative = negatives.length ? await outcome(NEGATIVE_ORG, r) : null;
      if (mappedOf(r).length === 0) unmapped.push({ req: { ...r, mapped: [] }, library: lib, negative });
      else rows.push({ req: { ...r, mapped: mappedOf(r) }, library: lib, negative });
      if ((i + 1) % 50 === 0) process.stderr.write(`checked ${i + 1}/${selected.length}\n`);
    }
    // Each framework is one check run against the procedures and one against the unrelated documents: completing
    // it applies the run-level corroboration the check service applies (run-corroboration.ts).
    const runs: Record<string, { library: RunReading; negative: RunReading | null }> = {};
    for (const f of byFramework.keys()) {
      const all = [...rows, ...unmapped].filter((r) => r.req.framework === f);
      runs[f] = { library: completeRun(all.map((r) => r.library)), negative: negatives.length ? completeRun(all.map((r) => r.negative!)) : null };
    }
    const perFramework = Object.fromEntries(
      [...byFramework.keys()].map((f) => [
        f,
        {
          split: splitOfFramework(f),
          runs: runs[f],
          ...figures(rows.filter((r) => r.req.framework === f)),
          unmapped_pass_rate: unmappedRate(unmapped.filter((u) => u.req.framework === f)),
        },
      ]),
    );
    const result = {
      dataset: a.dataset,
      split: a.split,
      judge: judge.model,
      embeddings: embeddings?.model ?? null,
      entailment_model: judge instanceof EmbeddedJudge && judge.entailment ? (nli.model?.name ?? null) : null,
      satisfaction_model: judge instanceof EmbeddedJudge && judge.satisfaction ? (rsm.model?.name ?? null) : null,
      breakdown: !a.skipBreakdown,
      // How a requirement's text was made: its title read with it (metadata.title, the run worker's reading), or not.
      requirement_text: a.withTitle ? 'title: summary' : 'summary',
      // Where each requirement's implementing documents come from: the frameworks' mappedControls, or the documents' own statements.
      mapping: a.mapping,
      standards: a.standards.length ? a.standards : null,
      library: a.library.length ? a.library : null,
      documents: { library: library.length, negative: negatives.map((d) => path.basename(d.file)) },
      chunks,
      ...figures(rows),
      unmapped_pass_rate: unmappedRate(unmapped),
      frameworks: perFramework,
      ingest_ms: ingestMs,
      check_ms_per_requirement: r3((Date.now() - t1) / Math.max(1, (rows.length + unmapped.length) * (negatives.length ? 2 : 1))),
    };
    if (a.details) writeFileSync(a.details, [...rows, ...unmapped].map((r) => JSON.stringify(r)).join('\n') + '\n');
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await retrieval.close();
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * A requirement's confidence from its sub-requirements (see the module comment): the lowest score when it passes,
 * else the highest score among its failing sub-requirements.
 */
function requirementConfidence(passed: boolean, subs: { verdict: string | null; score: number }[]): number {
  const failing = subs.filter((s) => s.verdict !== 'COMPLIANT');
  return passed ? Math.min(...subs.map((s) => s.score)) : Math.max(...failing.map((s) => s.score));
}

/** A completed run of the evaluation: its pass share by the single verdicts and its run-level reading. */
interface RunReading {
  requirements: number;
  pass_share: number;
  reading: 'corroborated' | 'doubtful' | 'none';
  raised: number;
  doubted: number;
}

/**
 * Completes one run of outcomes the way the check service does (readRun): sets each outcome's `passed` and
 * `confidence` from the run-level reading, in place.
 */
function completeRun(outcomes: Outcome[]): RunReading {
  const read = readRun(outcomes.map((o) => ({ passed: o.singlePassed, subs: o.subs })));
  outcomes.forEach((o, i) => {
    const r = read.requirements[i];
    o.passed = r.passed;
    o.confidence = requirementConfidence(r.passed, r.subs);
    o.verdicts = r.subs.map((s) => s.verdict ?? 'NOT_FOUND');
  });
  const changes = read.requirements.flatMap((r) => r.subs.map((s) => s.change));
  return {
    requirements: outcomes.length,
    pass_share: r3(read.passShare),
    reading: read.reading,
    raised: changes.filter((c) => c === 'raised').length,
    doubted: changes.filter((c) => c === 'doubted').length,
  };
}

function unmappedRate(rows: { library: Outcome }[]): { requirements: number; pass_rate: number | null } {
  return { requirements: rows.length, pass_rate: rows.length ? r3(rows.filter((r) => r.library.passed).length / rows.length) : null };
}

/**
 * Cross-validation group of a requirement in `--dump-features` (train_judge.py folds by group): its title, so
 * the same control in two editions or in ISO/IEC 27001 Annex A and 27002 ("Information backup") stays in one
 * fold; the ref when it has no title.
 */
function groupOf(r: ControlRequirement): string {
  return `controls:${(r.title ?? `${r.framework}:${r.ref}`).toLowerCase().replace(/\s+/g, ' ').trim()}`;
}

/** Chunks retrieved per requirement for the hard negatives of `--dump-units`. */
const DUMP_RETRIEVED = 16;

/**
 * `--dump-units`: per mapped requirement, the evidence units (with the first stage's scores: lexical,
 * similarity, score) of every chunk of its mapped procedures (`source: "mapped"`) and of the other
 * procedures' chunks among the {@link DUMP_RETRIEVED} that retrieval ranks highest (`source: "retrieved"`).
 */
async function dumpUnits(
  file: string,
  reqs: ControlRequirement[],
  service: RetrievalService,
  embeddings: ReturnType<RetrievalService['embeddingModel']>,
  docIdOf: Map<string, string>,
  mappedOf: (r: ControlRequirement) => string[],
): Promise<void> {
  const cache = new Map<string, number[]>();
  const out: string[] = [];
  const chunksOf = async (docId: string) => {
    const { chunks } = await service.listDocumentChunks(LIBRARY_ORG, uuidOf(`${LIBRARY_ORG}:${docId}`), 1000, 0);
    return chunks;
  };
  for (const [i, r] of reqs.entries()) {
    const reading = readRequirement(r.text);
    const mapped = new Set(mappedOf(r));
    const mappedPassages: PassageInput[] = [];
    for (const m of mapped) for (const c of await chunksOf(m)) mappedPassages.push(passageOf(c, 1));
    const hits = (await service.search(reading.core, { orgId: LIBRARY_ORG }, DUMP_RETRIEVED)).hits;
    const retrieved = hits.filter((h) => !mapped.has(docIdOf.get(h.chunk.documentId) ?? '')).map((h) => passageOf(h.chunk, h.score));
    const units: unknown[] = [];
    for (const [source, passages] of [
      ['mapped', mappedPassages],
      ['retrieved', retrieved],
    ] as const) {
      if (passages.length === 0) continue;
      let semantic: { query: number[]; sentences: Map<string, number[]> } | undefined;
      const sents = sentenceUnits(passages);
      if (embeddings) {
        const all = semanticCandidates(reading.core, passages, sents, Number.MAX_SAFE_INTEGER);
        const missing = [...new Set([reading.core, ...all.map((u) => u.text)].filter((t) => !cache.has(t)))];
        const vectors = missing.length ? await embedByLength(embeddings, missing) : [];
        missing.forEach((t, j) => cache.set(t, vectors[j]));
        semantic = { query: cache.get(reading.core)!, sentences: new Map(all.map((u) => [unitKey(u), cache.get(u.text)!])) };
      }
      for (const ru of rankUnits(reading.core, passages, semantic, sents)) {
        units.push({
          source,
          doc: docIdOf.get(ru.unit.passage.documentId),
          chunk: ru.unit.passage.chunkId,
          start: ru.unit.start,
          end: ru.unit.end,
          sentences: ru.unit.sentences.length,
          text: ru.unit.text,
          model_text: unitModelText(ru.unit),
          lexical: r3(ru.lexical),
          similarity: r3(ru.similarity),
          score: r3(ru.score),
        });
      }
    }
    out.push(
      JSON.stringify({
        id: r.id,
        framework: r.framework,
        split: splitOfFramework(r.framework),
        section: r.section,
        text: r.text,
        core: reading.core,
        mapped: [...mapped],
        units,
      }),
    );
    if ((i + 1) % 100 === 0) process.stderr.write(`units ${i + 1}/${reqs.length}\n`);
  }
  writeFileSync(file, out.join('\n') + '\n');
  process.stdout.write(`${JSON.stringify({ requirements: out.length, file })}\n`);
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${err?.stack ?? err}\n`);
    process.exit(1);
  });
}
