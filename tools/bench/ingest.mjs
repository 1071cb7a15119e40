#!/usr/bin/env node
// `npm run bench:ingest`: ingestion throughput end to end through the API, against the bare tools
// on the same files in the same run (figures are ratios, so they hold on any machine).
//
// 1. Text PDFs (../shared/corpus/pdf): upload every file, one `process` call, time until all are
//    `completed`; baseline: `pdftotext` alone on the same files with the same parallelism.
// 2. Scanned PDFs (../shared/corpus/pdf_scanned, skip with --no-ocr): same, baseline: `pdftoppm`
//    at the pipeline's resolution + `tesseract` (OMP_THREAD_LIMIT=1), one page per core at a time.
// Prints pages/s and MB/s for both and the ratio (pipeline time / baseline time; target <= 3 for
// text PDFs, about 1 for OCR), and the ingestion process's peak RSS (VmHWM).
//
// Usage: npm run bench:ingest [-- --concurrency N --no-ocr --dir <folder of PDFs>]
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import { ensureSystemPackages, ROOT, step } from '../lib/bootstrap.mjs';
import { startStack } from '../lib/stack.mjs';
import { newTenant } from '../lib/api-client.mjs';
import { pdfPages } from '../lib/measure.mjs';

const run = promisify(execFile);
const { values } = parseArgs({
  options: {
    concurrency: { type: 'string', default: String(os.cpus().length) },
    'no-ocr': { type: 'boolean', default: false },
    dir: { type: 'string' },
  },
});
const CORPUS = path.join(ROOT, '../shared/corpus');
const concurrency = Math.max(1, Number(values.concurrency));
const cores = os.cpus().length;
const { dpiForPage } = await import(path.join(ROOT, 'dist/apps/ingestion/src/extraction/ocr.js'));

const pdfsIn = (dir) =>
  readdirSync(dir)
    .filter((n) => n.endsWith('.pdf'))
    .sort()
    .map((n) => path.join(dir, n));
const now = () => Number(process.hrtime.bigint()) / 1e6;

/** Runs `fn` over `items`, at most `limit` at once. */
async function pool(items, limit, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

/** Peak resident set size of a process in MB (VmHWM from /proc), or null. */
function peakRssMb(pid) {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kb-bench-ingest-'));
const { natsServer } = ensureSystemPackages();
const stack = await startStack({ dataDir, natsServer, quiet: true, env: { INGESTION_CONCURRENCY: String(concurrency), LOG_LEVEL: 'warn' } });
const rows = [];
try {
  const { call } = newTenant(stack, 'Bench ingest', 100000);

  /** Uploads `files`, processes them with one call, returns ms until all left processing. */
  async function ingest(files) {
    const ids = [];
    for (const f of files) {
      const bytes = readFileSync(f);
      const slot = await call('POST', '/api/v2/documents', { file_name: path.basename(f), content_type: 'application/pdf', size_bytes: bytes.length });
      await fetch(slot.upload.url.replace('localhost', '127.0.0.1'), { method: 'PUT', headers: { 'Content-Type': 'application/pdf' }, body: bytes });
      ids.push(slot.id);
    }
    const t0 = now();
    await call('POST', '/api/v2/documents/process', { document_ids: ids });
    const pending = new Set(ids);
    const outcome = new Map();
    while (pending.size > 0) {
      for (const id of [...pending]) {
        const doc = await call('GET', `/api/v2/documents/${id}`);
        if (doc.status === 'completed' || doc.status === 'failed') {
          pending.delete(id);
          outcome.set(id, doc);
        }
      }
      if (pending.size > 0) await new Promise((r) => setTimeout(r, 50));
    }
    const ms = now() - t0;
    const failed = [...outcome.values()].filter((d) => d.status === 'failed');
    for (const d of failed) console.log(`  failed: ${d.file_name}: ${d.error_message}`);
    return { ms, failed: failed.length };
  }

  const report = (label, files, pipelineMs, baselineMs, baselineLabel, failed) => {
    const pages = files.reduce((s, f) => s + pdfPages(f), 0);
    const mb = files.reduce((s, f) => s + statSync(f).size, 0) / 1e6;
    const fmt = (ms) => `${(pages / (ms / 1000)).toPrecision(3)} pages/s, ${(mb / (ms / 1000)).toPrecision(3)} MB/s (${(ms / 1000).toFixed(2)} s)`;
    rows.push([label, `${files.length} files, ${pages} pages, ${mb.toFixed(1)} MB`, `pipeline ${fmt(pipelineMs)}`, `${baselineLabel} ${fmt(baselineMs)}`, `ratio ${(pipelineMs / baselineMs).toFixed(2)}x`, failed ? `${failed} failed` : 'all completed']);
  };

  // --- Text PDFs ---
  const textPdfs = pdfsIn(values.dir ? path.resolve(values.dir) : path.join(CORPUS, 'pdf'));
  step(`baseline: pdftotext on ${textPdfs.length} PDFs, ${concurrency} at a time`);
  let t = now();
  await pool(textPdfs, concurrency, (f) => run('pdftotext', ['-enc', 'UTF-8', f, '-'], { maxBuffer: 1 << 30 }));
  const textBaseline = now() - t;
  step(`pipeline: the same PDFs through the API (INGESTION_CONCURRENCY=${concurrency})`);
  const text = await ingest(textPdfs);
  report('text PDFs', textPdfs, text.ms, textBaseline, 'pdftotext', text.failed);

  // --- Scanned PDFs (OCR) ---
  if (!values['no-ocr']) {
    const scanned = pdfsIn(path.join(CORPUS, 'pdf_scanned'));
    const pages = scanned.flatMap((f) => {
      const sizes = new Map();
      const out = execFileSync('pdfinfo', ['-f', '1', '-l', String(pdfPages(f)), f], { encoding: 'utf8' });
      for (const m of out.matchAll(/^Page\s+(\d+)\s+size:\s+([\d.]+)\s+x\s+([\d.]+)/gm)) sizes.set(Number(m[1]), [Number(m[2]), Number(m[3])]);
      return [...sizes].map(([page, size]) => ({ f, page, dpi: dpiForPage(size) }));
    });
    step(`baseline: pdftoppm + tesseract (1 thread each) on ${pages.length} scanned pages, ${cores} at a time`);
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'kb-bench-ocr-'));
    t = now();
    await pool(pages, cores, async ({ f, page, dpi }) => {
      const prefix = path.join(tmp, `${path.basename(f)}-${page}`);
      await run('pdftoppm', ['-r', String(dpi), '-gray', '-png', '-f', String(page), '-l', String(page), '-singlefile', f, prefix]);
      await run('tesseract', [`${prefix}.png`, 'stdout', '-l', 'eng', '--psm', '1'], { env: { ...process.env, OMP_THREAD_LIMIT: '1' }, maxBuffer: 1 << 26 });
    });
    const ocrBaseline = now() - t;
    rmSync(tmp, { recursive: true, force: true });
    step('pipeline: the same scanned PDFs through the API');
    const ocr = await ingest(scanned);
    report('scanned PDFs (OCR)', scanned, ocr.ms, ocrBaseline, 'pdftoppm+tesseract', ocr.failed);
  }
  const rss = peakRssMb(stack.services.get('ingestion').pid);

  console.log(`\nbench:ingest on ${cores} cores (${os.cpus()[0]?.model ?? 'cpu'}), INGESTION_CONCURRENCY=${concurrency}`);
  for (const r of rows) console.log(`- ${r.join(' | ')}`);
  console.log(`- ingestion process peak RSS: ${rss ?? '?'} MB`);
} finally {
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
