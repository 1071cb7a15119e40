#!/usr/bin/env node
// `npm run bench:ingest -- --memory` (or `node tools/bench/ingest-memory.mjs`): peak memory of the
// ingestion pipeline on the largest files this machine can build, each processed in a fresh
// process (the real DocumentProcessor: object storage download, extraction, chunking; the index
// call only counts chunks). Prints file size, outcome (`ready` or `failed`), time and peak RSS
// (VmHWM) per file up to that point, next to the RSS of the same process before processing.
//
// Files built in a temporary folder:
// - images-486MB.pdf: 18 pages, each a text line and a 3000x3000 RGB image of random bytes
//   stored uncompressed (a large file with little text);
// - policy-x25.pdf: the 193-page Debian Policy 25 times (4,825 text pages);
// - events-30MB.csv: the OSHA events CSV repeated to 30 MB (under the 32 MiB text budget);
// - events-300MB.csv: the same to 300 MB (over the budget: must fail fast, not load it).
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { closeSync, copyFileSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from '../lib/bootstrap.mjs';

const CORPUS = path.join(ROOT, '../shared/corpus');

const VOCABULARY =
  'crane scaffold harness guardrail ladder trench excavation welding ventilation respirator hoist rigging forklift signage lockout tagout permit audit'.split(
    ' ',
  );

/** Writes a PDF of `n` pages, each with a text line and a `w` x `h` uncompressed random RGB image. */
function writeImagePdf(file, n, w, h) {
  const fd = openSync(file, 'w');
  let pos = 0;
  const offs = {};
  const write = (b) => {
    const buf = typeof b === 'string' ? Buffer.from(b, 'latin1') : b;
    writeSync(fd, buf);
    pos += buf.length;
  };
  const obj = (i, body) => {
    offs[i] = pos;
    write(`${i} 0 obj\n${body}\nendobj\n`);
  };
  write('%PDF-1.4\n');
  const pages = Array.from({ length: n }, (_, p) => [4 + p * 3, 5 + p * 3, 6 + p * 3]);
  obj(1, '<< /Type /Catalog /Pages 2 0 R >>');
  obj(2, `<< /Type /Pages /Kids [${pages.map(([pg]) => `${pg} 0 R`).join(' ')}] /Count ${n} >>`);
  obj(3, '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>');
  pages.forEach(([pg, cs, im], i) => {
    obj(pg, `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> /XObject << /Im0 ${im} 0 R >> >> /Contents ${cs} 0 R >>`);
    // Different words on every page (a line repeated on every page would be dropped as a running header).
    const words = Array.from({ length: 12 }, (_, k) => VOCABULARY[(i * 7 + k * 13) % VOCABULARY.length]).join(' ');
    const text = `BT /F1 12 Tf 72 740 Td (Inspection ${i + 1}: ${words}.) Tj ET q 468 0 0 600 72 100 cm /Im0 Do Q`;
    obj(cs, `<< /Length ${text.length} >>\nstream\n${text}\nendstream`);
    offs[im] = pos;
    write(
      `${im} 0 obj\n<< /Type /XObject /Subtype /Image /Width ${w} /Height ${h} /ColorSpace /DeviceRGB /BitsPerComponent 8 /Length ${w * h * 3} >>\nstream\n`,
    );
    for (let left = w * h * 3; left > 0; left -= 1 << 22) write(randomBytes(Math.min(left, 1 << 22)));
    write('\nendstream\nendobj\n');
  });
  const count = 3 + n * 3;
  const xref = pos;
  write(`xref\n0 ${count + 1}\n0000000000 65535 f \n`);
  for (let i = 1; i <= count; i++) write(`${String(offs[i]).padStart(10, '0')} 00000 n \n`);
  write(`trailer\n<< /Size ${count + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`);
  closeSync(fd);
}

/** Repeats the rows of `src` (keeping its header once) until `file` is at least `bytes` long. */
function writeBigCsv(src, file, bytes) {
  const [header, ...rows] = readFileSync(src, 'utf8').split('\n');
  const body = rows.filter(Boolean).join('\n') + '\n';
  const fd = openSync(file, 'w');
  writeSync(fd, header + '\n');
  for (let size = header.length; size < bytes; size += Buffer.byteLength(body)) writeSync(fd, body);
  closeSync(fd);
}

// Child mode: process one file and print a JSON line.
if (process.argv[2] === '--child') {
  const [, , , file, contentType] = process.argv;
  const { DocumentProcessor } = await import(path.join(ROOT, 'dist/apps/ingestion/src/pipeline/document-processor.js'));
  const { LocalObjectStorage } = await import(path.join(ROOT, 'dist/libs/storage/src/index.js'));
  const { createLogger } = await import(path.join(ROOT, 'dist/libs/common/src/index.js'));
  const hwm = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
  const root = mkdtempSync(path.join(os.tmpdir(), 'kb-mem-'));
  try {
    const key = `orgs/bench/documents/${randomUUID()}`;
    mkdirSync(path.dirname(path.join(root, 'objects', key)), { recursive: true });
    copyFileSync(file, path.join(root, 'objects', key));
    const storage = new LocalObjectStorage({
      rootDir: root,
      publicBaseUrl: 'http://127.0.0.1:1',
      signingSecret: 'x'.repeat(32),
      maxUploadBytes: 600 * 1024 * 1024,
    });
    await storage.ensureReady();
    const baseline = hwm();
    const statuses = [];
    let chunks = 0;
    const t0 = Date.now();
    const p = new DocumentProcessor({
      storage,
      indexChunks: async (_o, req) => void (chunks = req.chunks.length),
      deleteChunks: async () => undefined,
      publishStatus: async (e) => {
        statuses.push(e);
        // Peak through `ready` (download, extraction, chunking, the index payload). The OCR
        // enrichment that may follow runs one page per core in separate tesseract processes.
        if (e.status !== 'completed') {
          console.log(
            JSON.stringify({
              status: e.status,
              error: e.errorMessage ?? null,
              chunks,
              ms: Date.now() - t0,
              baselineMb: Math.round(baseline),
              peakMb: Math.round(hwm()),
            }),
          );
          process.exit(0);
        }
      },
      workDir: root,
      logger: createLogger('bench-memory'),
      timeoutMs: 30 * 60 * 1000,
      maxPages: 5000,
    });
    await p.process(
      {
        documentId: randomUUID(),
        orgId: 'bench',
        projectId: null,
        fileName: path.basename(file),
        contentType,
        sizeBytes: statSync(file).size,
        storageKey: key,
        requestedAt: new Date().toISOString(),
      },
      { attempt: 1, maxDeliver: 3, isLastAttempt: false },
    );
    const last = statuses.at(-1);
    console.log(
      JSON.stringify({
        status: last?.status,
        error: last?.errorMessage ?? null,
        chunks,
        ms: Date.now() - t0,
        baselineMb: Math.round(baseline),
        peakMb: Math.round(hwm()),
      }),
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  process.exit(0);
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'kb-bench-memory-'));
try {
  const files = [];
  const images = path.join(dir, 'images-486MB.pdf');
  writeImagePdf(images, 18, 3000, 3000);
  files.push([images, 'application/pdf']);
  const policy = path.join(dir, 'policy-x25.pdf');
  execFileSync('pdfunite', [...Array(25).fill(path.join(CORPUS, 'pdf/debian-policy-4.6.2.0.pdf')), policy]);
  files.push([policy, 'application/pdf']);
  const csv30 = path.join(dir, 'events-30MB.csv');
  writeBigCsv(path.join(CORPUS, 'csv/osha_fatality_catastrophe_events_2013-06-15.csv'), csv30, 30 * 1024 * 1024);
  files.push([csv30, 'text/csv']);
  const csv300 = path.join(dir, 'events-300MB.csv');
  writeBigCsv(path.join(CORPUS, 'csv/osha_fatality_catastrophe_events_2013-06-15.csv'), csv300, 300 * 1024 * 1024);
  files.push([csv300, 'text/csv']);

  console.log(`peak RSS of the ingestion pipeline, one fresh process per file (${os.cpus().length} cores)`);
  for (const [file, type] of files) {
    const r = spawnSync(process.execPath, [new URL(import.meta.url).pathname, '--child', file, type], {
      encoding: 'utf8',
      env: { ...process.env, LOG_LEVEL: 'warn' },
      maxBuffer: 1 << 26,
    });
    const line = r.stdout
      .split('\n')
      .filter((l) => l.startsWith('{"status"'))
      .pop();
    const res = line ? JSON.parse(line) : { status: `crashed (${r.status ?? r.signal})`, error: r.stderr.slice(-500) };
    const mb = (statSync(file).size / 1e6).toFixed(0);
    console.log(
      `- ${path.basename(file)} (${mb} MB): ${res.status}${res.error ? ` (${res.error})` : ''}, ${res.chunks ?? 0} chunks, ` +
        `${((res.ms ?? 0) / 1000).toFixed(1)} s, peak RSS ${res.peakMb} MB (process baseline ${res.baselineMb} MB)`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
