#!/usr/bin/env node
// `npm run bench:ingest`: how long until documents are searchable (`ready`) and fully indexed
// (`completed`), end to end through the API, against the bare tools on the same files in the same run
// (figures are ratios, so they hold on any machine). Three sets:
//
// 1. Text PDFs (../shared/corpus/pdf, or --dir): upload every file, one `process` call per 100, then
//    time until every document is `ready`, and until every one is `completed`.
// 2. Scanned PDFs (../shared/corpus/pdf_scanned; skip with --no-ocr): the same.
// 3. A folder of small office and Markdown files (--small N, default 1,000; 0 skips it): the control
//    procedures and policies of ../shared/datasets/controls as Markdown, and the DOCX and XLSX files of
//    ../shared/corpus, cycled to N files, each made distinct (a line "Copy k." appended to the Markdown,
//    a last paragraph or cell added inside the office package), so no two files have the same text.
//
// Baselines, in the same run:
// - `ready`: the format's own extractor with the same parallelism: `pdftotext` (text PDFs), `pdftoppm` at
//   the pipeline's resolution + `tesseract` (one page per core at a time, OMP_THREAD_LIMIT=1) for scans,
//   and for the small files the libraries the extractors call, in this process (marked's lexer, mammoth's
//   HTML conversion, exceljs's workbook load).
// - `completed`: that, plus embedding the same chunks with the same model in one process: the chunks
//   are made by the ingestion's own code (`extractDocument` → `chunkDocument` → `toIndexChunks`, not
//   timed), their text as enrichment embeds it (`embeddingText`: heading path, then text), embedded by
//   the local model (KB_MODELS_DIR=<repo>/../shared/models, EMBEDDINGS_MODEL=all-MiniLM-L6-v2 unless set)
//   in passes of EMBEDDINGS_BATCH_SIZE texts on all cores (onnxruntime intra-op threads = cores: the best one
//   process does), timed alone.
// Prints, per set, pages (or files) per second and the ratios pipeline / baseline for `ready` and
// `completed` (targets, issue 33: text PDFs `ready` <= 3x pdftotext, `completed` <= 1.3x pdftotext +
// embedding; OCR <= 1.2x pdftoppm + tesseract), the ingestion and retrieval processes' peak RSS (VmHWM),
// and one JSON object on the last line.
//
// The services run with their defaults; --concurrency N sets INGESTION_CONCURRENCY, --embeddings-threads N
// EMBEDDINGS_THREADS. Figures taken while other work loads the machine are not comparable: the load
// average before and after is printed with them.
//
// Usage: npm run bench:ingest [-- --concurrency N --embeddings-threads N --no-ocr --dir <folder of PDFs> --small N
//          --sets text,ocr,small --keep-data --log-level info]
import { execFile, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import { ensureSystemPackages, ROOT, step } from '../lib/bootstrap.mjs';
import { startStack } from '../lib/stack.mjs';
import { newTenant, uploadDocument } from '../lib/api-client.mjs';
import { pdfPages, pool } from '../lib/measure.mjs';

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const dist = (p) => require(path.join(ROOT, 'dist', p));
const { values } = parseArgs({
  options: {
    concurrency: { type: 'string' },
    'embeddings-threads': { type: 'string' },
    'no-ocr': { type: 'boolean', default: false },
    dir: { type: 'string' },
    small: { type: 'string', default: '1000' },
    sets: { type: 'string', default: 'text,ocr,small' },
    'keep-data': { type: 'boolean', default: false },
    'log-level': { type: 'string', default: 'warn' },
  },
});
const CORPUS = path.join(ROOT, '../shared/corpus');
const CONTROLS = path.join(ROOT, '../shared/datasets/controls');
const cores = os.cpus().length;
/** The bare tools' parallelism: one file (or page) per core. */
const concurrency = cores;
/** Settings given to the services (their defaults otherwise). */
const serviceEnv = {
  LOG_LEVEL: values['log-level'],
  ...(values.concurrency ? { INGESTION_CONCURRENCY: values.concurrency } : {}),
  ...(values['embeddings-threads'] ? { EMBEDDINGS_THREADS: values['embeddings-threads'] } : {}),
};
const sets = new Set(values.sets.split(','));
if (values['no-ocr']) sets.delete('ocr');
if (Number(values.small) <= 0) sets.delete('small');
process.env.KB_MODELS_DIR ??= path.join(ROOT, '../shared/models');
process.env.EMBEDDINGS_MODEL ??= 'all-MiniLM-L6-v2';

const { dpiForPage } = dist('apps/ingestion/src/extraction/ocr.js');
const { extractDocument } = dist('apps/ingestion/src/extraction/index.js');
const { chunkDocument } = dist('apps/ingestion/src/chunking/index.js');
const { toIndexChunks } = dist('apps/ingestion/src/pipeline/document-processor.js');
const { embeddingText } = dist('apps/retrieval/src/search/retrieval.service.js');
const { openEmbeddingModel, embeddingsConfigFromEnv } = dist('libs/models/src/index.js');
const { contentTypeForFile } = dist('libs/common/src/index.js');

const pdfsIn = (dir) =>
  readdirSync(dir)
    .filter((n) => n.endsWith('.pdf'))
    .sort()
    .map((n) => path.join(dir, n));
const now = () => Number(process.hrtime.bigint()) / 1e6;
const round = (x, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

/** Peak resident set size of a process in MB (VmHWM from /proc), or null. */
function peakRssMb(pid) {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/**
 * The small-file folder: `n` files cycled from the control procedures and policies (Markdown) and the
 * corpus's DOCX and XLSX files, each made distinct (see the header). Returns the file paths.
 */
async function smallFiles(dir, n) {
  const JSZip = require('jszip');
  const markdown = ['procedures', 'policies'].flatMap((d) =>
    readdirSync(path.join(CONTROLS, d))
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => path.join(CONTROLS, d, f)),
  );
  const office = ['docx', 'xlsx'].flatMap((d) =>
    readdirSync(path.join(CORPUS, d))
      .filter((f) => f.endsWith(`.${d}`))
      .sort()
      .map((f) => path.join(CORPUS, d, f)),
  );
  // About one office file in four, as in a folder of a project's documents.
  const sources = [];
  for (let i = 0; sources.length < n; i++) {
    sources.push(i % 4 === 3 ? office[Math.floor(i / 4) % office.length] : markdown[(i - Math.floor(i / 4)) % markdown.length]);
  }
  const files = [];
  for (const [k, src] of sources.entries()) {
    const ext = path.extname(src);
    const out = path.join(dir, `${String(k).padStart(4, '0')}-${path.basename(src, ext)}${ext}`);
    if (ext === '.md') writeFileSync(out, `${readFileSync(src, 'utf8')}\n\nCopy ${k}.\n`);
    else {
      const zip = await JSZip.loadAsync(readFileSync(src));
      if (ext === '.docx') {
        const xml = await zip.file('word/document.xml').async('string');
        zip.file('word/document.xml', xml.replace(/<w:sectPr/, `<w:p><w:r><w:t>Copy ${k}.</w:t></w:r></w:p><w:sectPr`));
      } else {
        const sheet = Object.keys(zip.files).find((f) => /^xl\/worksheets\/sheet\d+\.xml$/.test(f));
        const xml = await zip.file(sheet).async('string');
        zip.file(sheet, xml.replace(/<\/sheetData>/, `<row r="1048576"><c r="A1048576" t="inlineStr"><is><t>Copy ${k}.</t></is></c></row></sheetData>`));
      }
      writeFileSync(out, await zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' }));
    }
    files.push(out);
  }
  return files;
}

/** Extracts and chunks `files` with the ingestion's own code (not timed); returns the texts enrichment embeds. */
async function chunkTexts(files) {
  const texts = [];
  for (const f of files) {
    const doc = await extractDocument(f, contentTypeForFile(f) ?? 'application/pdf');
    const chunks = toIndexChunks({ documentId: 'bench', orgId: 'bench', projectId: null, fileName: path.basename(f) }, chunkDocument(doc));
    for (const c of chunks) texts.push(embeddingText(c));
  }
  return texts;
}

/** Milliseconds to embed `texts` with the local model in this process, on all cores, in the service's passes (EMBEDDINGS_BATCH_SIZE texts each). */
async function embedMs(texts) {
  const config = embeddingsConfigFromEnv({ ...process.env, EMBEDDINGS_THREADS: String(cores) });
  const opened = await openEmbeddingModel(config, { coalesce: false });
  if (!opened.model) throw new Error(`bench:ingest needs the local embedding model: ${opened.reason}`);
  await opened.model.embed(['warm-up'], undefined, 'bulk');
  const t = now();
  await opened.model.embed(texts, undefined, 'bulk');
  const ms = now() - t;
  opened.model.dispose?.();
  return ms;
}

/** The readers the small-file extractors call, in this process (the `ready` baseline of the small files). */
async function smallBaselineMs(files) {
  const { lexer } = require('marked');
  const mammoth = require('mammoth');
  const ExcelJS = require('exceljs');
  const t = now();
  for (const f of files) {
    const ext = path.extname(f);
    if (ext === '.md') lexer(readFileSync(f, 'utf8'));
    else if (ext === '.docx') await mammoth.convertToHtml({ buffer: readFileSync(f) });
    else await new ExcelJS.Workbook().xlsx.load(readFileSync(f));
  }
  return now() - t;
}

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kb-bench-ingest-'));
const work = mkdtempSync(path.join(os.tmpdir(), 'kb-bench-ingest-files-'));
const { natsServer } = ensureSystemPackages();
const stack = await startStack({ dataDir, natsServer, quiet: true, env: serviceEnv });
const rows = [];
const result = { cores, cpu: os.cpus()[0]?.model ?? null, service_env: serviceEnv, load_average: os.loadavg().map((x) => round(x)), sets: {} };
try {
  const { call } = newTenant(stack, 'Bench ingest', 1000000);

  /**
   * Uploads `files`, processes them (100 per call), and polls the list endpoint every 100 ms: returns ms until
   * every document was seen `ready` or beyond, and until every one left processing.
   */
  async function ingest(files) {
    const ids = [];
    for (const f of files) {
      const bytes = readFileSync(f);
      const contentType = contentTypeForFile(f);
      ids.push(await uploadDocument(call, { fileName: path.basename(f), contentType, bytes }));
    }
    const t0 = now();
    for (let i = 0; i < ids.length; i += 100) await call('POST', '/api/v2/documents/process', { document_ids: ids.slice(i, i + 100) });
    const ready = new Map();
    const done = new Map();
    while (done.size < ids.length) {
      for (let i = 0; i < ids.length; i += 100) {
        const page = await call('GET', `/api/v2/documents?document_ids=${ids.slice(i, i + 100).join(',')}&limit=100`);
        const t = now() - t0;
        for (const d of page) {
          if (d.status !== 'processing' && !ready.has(d.id)) ready.set(d.id, t);
          if ((d.status === 'completed' || d.status === 'failed') && !done.has(d.id)) done.set(d.id, { t, d });
        }
      }
      if (done.size < ids.length) await new Promise((r) => setTimeout(r, 100));
    }
    const failed = [...done.values()].filter((x) => x.d.status === 'failed').map((x) => x.d);
    for (const d of failed) console.log(`  failed: ${d.file_name}: ${d.error_message}`);
    return { readyMs: Math.max(...ready.values()), completedMs: Math.max(...[...done.values()].map((x) => x.t)), failed: failed.length };
  }

  /** Records one set's figures: `unit` pages or files, per second, and the two ratios. */
  const report = (label, files, units, unitName, pipeline, readyBaselineMs, baselineLabel, embeddingMs, texts) => {
    const rate = (ms) => round(units / (ms / 1000), 3);
    const completedBaselineMs = readyBaselineMs + embeddingMs;
    const entry = {
      files: files.length,
      [unitName]: units,
      mb: round(files.reduce((s, f) => s + statSync(f).size, 0) / 1e6, 1),
      chunks: texts,
      ready_s: round(pipeline.readyMs / 1000),
      completed_s: round(pipeline.completedMs / 1000),
      baseline: baselineLabel,
      baseline_ready_s: round(readyBaselineMs / 1000),
      baseline_embedding_s: round(embeddingMs / 1000),
      ready_ratio: round(pipeline.readyMs / readyBaselineMs),
      completed_ratio: round(pipeline.completedMs / completedBaselineMs),
      completed_vs_extractor_ratio: round(pipeline.completedMs / readyBaselineMs),
      failed: pipeline.failed,
    };
    result.sets[label] = entry;
    rows.push(
      `${label}: ${files.length} files${unitName === 'files' ? '' : `, ${units} ${unitName}`}, ${texts} chunks | ready ${rate(pipeline.readyMs)} ${unitName}/s (${entry.ready_s} s), ` +
        `${entry.ready_ratio}x ${baselineLabel} (${entry.baseline_ready_s} s) | completed ${rate(pipeline.completedMs)} ${unitName}/s (${entry.completed_s} s), ` +
        `${entry.completed_ratio}x ${baselineLabel} + embedding (${entry.baseline_ready_s} + ${entry.baseline_embedding_s} s)` +
        `${pipeline.failed ? ` | ${pipeline.failed} failed` : ''}`,
    );
  };

  /**
   * What every set does after its extractor baseline (`readyBaselineMs`): embeds its chunks in one process (the
   * `completed` baseline is the two added), sends the same files through the API, and reports the row.
   */
  const compareWithPipeline = async (label, files, units, unitName, baselineLabel, readyBaselineMs, what) => {
    const texts = await chunkTexts(files);
    step(`baseline: embedding their ${texts.length} chunks in one process`);
    const embeddingMs = await embedMs(texts);
    step(`pipeline: the same ${what} through the API`);
    const pipeline = await ingest(files);
    report(label, files, units, unitName, pipeline, readyBaselineMs, baselineLabel, embeddingMs, texts.length);
  };

  // --- Text PDFs ---
  if (sets.has('text')) {
    const textPdfs = pdfsIn(values.dir ? path.resolve(values.dir) : path.join(CORPUS, 'pdf'));
    step(`baseline: pdftotext on ${textPdfs.length} PDFs, ${concurrency} at a time`);
    const t = now();
    await pool(textPdfs, concurrency, (f) => run('pdftotext', ['-enc', 'UTF-8', f, '-'], { maxBuffer: 1 << 30 }));
    const textBaseline = now() - t;
    const pages = textPdfs.reduce((s, f) => s + pdfPages(f), 0);
    await compareWithPipeline('text PDFs', textPdfs, pages, 'pages', 'pdftotext', textBaseline, 'PDFs');
  }

  // --- Scanned PDFs (OCR) ---
  if (sets.has('ocr')) {
    const scanned = pdfsIn(path.join(CORPUS, 'pdf_scanned'));
    const pages = scanned.flatMap((f) => {
      const sizes = new Map();
      const out = execFileSync('pdfinfo', ['-f', '1', '-l', String(pdfPages(f)), f], { encoding: 'utf8' });
      for (const m of out.matchAll(/^Page\s+(\d+)\s+size:\s+([\d.]+)\s+x\s+([\d.]+)/gm)) sizes.set(Number(m[1]), [Number(m[2]), Number(m[3])]);
      return [...sizes].map(([page, size]) => ({ f, page, dpi: dpiForPage(size) }));
    });
    step(`baseline: pdftoppm + tesseract (1 thread each) on ${pages.length} scanned pages, ${cores} at a time`);
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'kb-bench-ocr-'));
    const t = now();
    await pool(pages, cores, async ({ f, page, dpi }) => {
      const prefix = path.join(tmp, `${path.basename(f)}-${page}`);
      await run('pdftoppm', ['-r', String(dpi), '-gray', '-png', '-f', String(page), '-l', String(page), '-singlefile', f, prefix]);
      await run('tesseract', [`${prefix}.png`, 'stdout', '-l', 'eng', '--psm', '1'], { env: { ...process.env, OMP_THREAD_LIMIT: '1' }, maxBuffer: 1 << 26 });
    });
    const ocrBaseline = now() - t;
    rmSync(tmp, { recursive: true, force: true });
    await compareWithPipeline('scanned PDFs (OCR)', scanned, pages.length, 'pages', 'pdftoppm+tesseract', ocrBaseline, 'scanned PDFs');
  }

  // --- A folder of small office and Markdown files ---
  if (sets.has('small')) {
    const dir = path.join(work, 'small');
    mkdirSync(dir);
    const files = await smallFiles(dir, Number(values.small));
    step(`baseline: the extractors' readers (marked, mammoth, exceljs) on ${files.length} small files`);
    const smallBaseline = await smallBaselineMs(files);
    await compareWithPipeline('small office and Markdown files', files, files.length, 'files', 'marked+mammoth+exceljs', smallBaseline, 'files');
  }
  result.peak_rss_mb = { ingestion: peakRssMb(stack.services.get('ingestion').pid), retrieval: peakRssMb(stack.services.get('retrieval').pid) };

  result.load_average_after = os.loadavg().map((x) => round(x));
  console.log(
    `\nbench:ingest on ${cores} cores (${result.cpu ?? 'cpu'}), services with ${JSON.stringify(serviceEnv)}; load average ${result.load_average.join(' ')} before, ${result.load_average_after.join(' ')} after`,
  );
  for (const r of rows) console.log(`- ${r}`);
  console.log(`- peak RSS: ingestion ${result.peak_rss_mb.ingestion ?? '?'} MB, retrieval ${result.peak_rss_mb.retrieval ?? '?'} MB`);
  console.log(JSON.stringify(result));
} finally {
  await stack.stop();
  if (values['keep-data']) console.log(`data folder kept: ${dataDir} (service logs in logs/)`);
  else rmSync(dataDir, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
}
