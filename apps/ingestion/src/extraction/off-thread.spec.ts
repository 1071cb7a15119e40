import JSZip from 'jszip';
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { extractDocument, ExtractedDocument, ExtractionError } from './index';
import { closeExtractionWorkers, extractionWorkerStats, REUSE_MAX_FILE_BYTES } from './off-thread';
import { corpus } from './testing/corpus';
import { writeLargeDocx, writeLargeHtml, writeLargeXlsx, writeLyingZipBomb } from './testing/large-files';
import { useTempDir } from './testing/temp-dir';

jest.setTimeout(300_000);
afterAll(() => closeExtractionWorkers());

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

/**
 * Longest event-loop stall (ms) while `work` runs, from `perf_hooks.monitorEventLoopDelay`. The
 * consumer heartbeats every 2 s and the ack wait is 10 s: a stall of seconds means a late heartbeat
 * (a redelivery to another worker) and every other job of the process frozen.
 */
async function loopStall<T>(work: () => Promise<T>): Promise<{ maxMs: number; result: T; wallMs: number }> {
  const h = monitorEventLoopDelay({ resolution: 10 });
  const t0 = Date.now();
  h.enable();
  const result = await work();
  // The histogram records a stall when its timer fires late: let it fire once more after the
  // work, or a stall that ends with the work itself (a synchronous parse) goes unrecorded.
  await new Promise((resolve) => setTimeout(resolve, 50));
  h.disable();
  return { maxMs: h.max / 1e6, result, wallMs: Date.now() - t0 };
}

/**
 * Generous bound (the 2 s heartbeat interval, on a loaded 2-core machine): parsed on the loop,
 * these files stall it for 3-30 s; off-thread the longest stall measured is under 1 s.
 */
const MAX_STALL_MS = 2000;

describe('large DOCX / XLSX / HTML are extracted off the event loop', () => {
  const dir = useTempDir('kb-offthread-spec-');

  const cases: [string, string, string, (file: string) => Promise<void>, (doc: ExtractedDocument) => void][] = [
    [
      'DOCX of 50k paragraphs',
      'big.docx',
      DOCX,
      (f) => writeLargeDocx(f, 50_000),
      (doc) => {
        expect(doc.blocks.filter((b) => b.kind === 'paragraph')).toHaveLength(50_000);
        expect(doc.blocks.filter((b) => b.kind === 'heading')).toHaveLength(1000);
      },
    ],
    [
      'XLSX of 600k cells',
      'big.xlsx',
      XLSX,
      (f) => writeLargeXlsx(f, 60_000, 10),
      (doc) => {
        expect(doc.pageCount).toBe(1);
        expect(
          doc.blocks
            .filter((b) => b.kind === 'table')
            .map((b) => b.text.split('\n').length - 1)
            .reduce((a, b) => a + b, 0),
        ).toBeGreaterThanOrEqual(59_999);
      },
    ],
    [
      'HTML of 30 MB',
      'big.html',
      'text/html',
      (f) => writeLargeHtml(f, 30 * 1024 * 1024),
      (doc) => {
        expect(doc.title).toBe('Site safety manual');
        expect(doc.blocks.length).toBeGreaterThan(100_000);
      },
    ],
  ];

  it.each(cases)('%s: the loop never stalls for seconds, the text is all there', async (label, name, type, write, check) => {
    const file = dir(name);
    await write(file);
    const { maxMs, result, wallMs } = await loopStall(() => extractDocument(file, type));
    // Printed for the record (docs/ingestion.md "Large files"); the assertion is the stall bound.
    process.stdout.write(
      `${label} (${(statSync(file).size / 1048576).toFixed(1)} MB): extraction ${wallMs} ms, longest event-loop stall ${maxMs.toFixed(0)} ms\n`,
    );
    check(result);
    expect(maxMs).toBeLessThan(MAX_STALL_MS);
  });
});

describe('off-thread extraction: limits, failures, progress and cancellation', () => {
  const dir = useTempDir('kb-offthread-limits-');
  let bigDocx: string;
  beforeAll(async () => {
    bigDocx = dir('big.docx');
    await writeLargeDocx(bigDocx, 30_000);
  });

  /** The process is still able to extract after a failure: a real DOCX of the corpus. */
  async function stillWorks(): Promise<void> {
    const doc = await extractDocument(corpus('docx/fedramp_oscal_Overview.docx'), DOCX);
    expect(doc.title).toBe('Overview');
  }

  it('a small document finishes while a big one is still being parsed', async () => {
    let bigDone = false;
    const big = extractDocument(bigDocx, DOCX).then((d) => {
      bigDone = true;
      return d;
    });
    const small = await extractDocument(corpus('docx/fedramp_oscal_Overview.docx'), DOCX);
    expect(small.title).toBe('Overview');
    expect(bigDone).toBe(false);
    expect((await big).blocks.length).toBeGreaterThan(30_000);
  });

  it('a zip bomb whose headers lie about its size fails with TOO_LARGE before it is inflated into memory', async () => {
    const file = dir('liar.docx');
    await writeLyingZipBomb(file, 200 * 1024 * 1024);
    expect(statSync(file).size).toBeLessThan(2 * 1024 * 1024);
    const error = await extractDocument(file, DOCX).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExtractionError);
    expect(error).toMatchObject({ code: 'TOO_LARGE' });
    expect((error as Error).message).toBe(
      'The Word document was rejected as a possible zip bomb: its part "word/document.xml" inflates to more than the 4096 bytes its header declares. ' +
        'Save a new copy from your office application and upload that.',
    );
    await stillWorks();
  });

  it('a file that needs more heap than maxHeapMb fails that document with TOO_LARGE, and the process survives', async () => {
    // 48 MB: under Jest the worker compiles the extractors from TypeScript as it starts. With a 24 MB cap, CI once
    // aborted the whole Jest process with V8's fatal "heap out of memory" at 22 MB, 196 ms into the thread (GC
    // trace of 27 November 2026): during that start-up, not the parse, where the cap cannot stop the thread
    // gently. The file needs far more than 48 MB, so the case still fails by the cap.
    const error = await extractDocument(bigDocx, DOCX, { maxHeapMb: 48 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExtractionError);
    expect(error).toMatchObject({ code: 'TOO_LARGE' });
    expect((error as Error).message).toBe(
      'The Word document needs more than 48 MB of memory to read, more than the limit per document; split it into smaller files and upload them separately.',
    );
    await stillWorks();
  });

  it('the time limit stops the parse with TIMEOUT', async () => {
    await expect(extractDocument(bigDocx, DOCX, { timeoutMs: 200 })).rejects.toMatchObject({ code: 'TIMEOUT' });
    await stillWorks();
  });

  it("cancellation (ExtractOptions.signal) terminates the parse and rejects with the caller's reason", async () => {
    const controller = new AbortController();
    const reason = new Error('document deleted');
    const work = extractDocument(bigDocx, DOCX, { signal: controller.signal });
    setTimeout(() => controller.abort(reason), 300);
    await expect(work).rejects.toBe(reason);
  });

  it('progress crosses the thread (sheets of a workbook read)', async () => {
    const sheets: [string, number | null, number | null][] = [];
    const doc = await extractDocument(corpus('xlsx/fedramp_OSCAL_Registry.xlsx'), XLSX, { onProgress: (...a) => sheets.push(a) });
    expect(sheets[0]).toEqual(['extracting', 0, doc.pageCount]);
    expect(sheets.at(-1)).toEqual(['extracting', doc.pageCount, doc.pageCount]);
  });

  it('file-system errors keep their code across the thread', async () => {
    await expect(extractDocument(dir('missing.docx'), DOCX)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('extraction threads are kept for the next document', () => {
  const dir = useTempDir('kb-offthread-pool-');
  const overview = corpus('docx/fedramp_oscal_Overview.docx');

  /** Threads started while `work` runs. */
  async function startedDuring(work: () => Promise<unknown>): Promise<number> {
    const before = extractionWorkerStats().started;
    await work().catch(() => undefined);
    return extractionWorkerStats().started - before;
  }

  it('small office files one after another share one thread (no module loading per document)', async () => {
    await closeExtractionWorkers();
    const started = await startedDuring(async () => {
      for (let i = 0; i < 5; i++) expect((await extractDocument(overview, DOCX)).title).toBe('Overview');
      await extractDocument(corpus('xlsx/fedramp_OSCAL_Registry.xlsx'), XLSX);
    });
    expect(started).toBe(1);
    expect(extractionWorkerStats().idle).toBe(1);
  });

  it('a document that fails in the extractor (a lying zip bomb) leaves the thread reusable', async () => {
    const file = dir('liar.docx');
    await writeLyingZipBomb(file, 50 * 1024 * 1024);
    await extractDocument(overview, DOCX);
    const started = await startedDuring(async () => {
      await expect(extractDocument(file, DOCX)).rejects.toMatchObject({ code: 'TOO_LARGE' });
      await extractDocument(overview, DOCX);
    });
    expect(started).toBe(0);
  });

  it('a thread stopped by the time limit, or over its heap cap, is ended: the next document gets a fresh one', async () => {
    const big = dir('big.docx');
    await writeLargeDocx(big, 30_000);
    await closeExtractionWorkers();
    expect(await startedDuring(() => extractDocument(big, DOCX, { timeoutMs: 200 }))).toBe(1);
    expect(await startedDuring(() => extractDocument(overview, DOCX))).toBe(1);
    expect(await startedDuring(() => extractDocument(big, DOCX, { maxHeapMb: 48 }))).toBe(1);
    expect(await startedDuring(() => extractDocument(overview, DOCX, { maxHeapMb: 48 }))).toBe(1);
    expect((await extractDocument(overview, DOCX)).title).toBe('Overview');
  });

  it(`after a file over ${REUSE_MAX_FILE_BYTES / 1048576} MB the thread is ended rather than kept holding the heap it grew`, async () => {
    await closeExtractionWorkers();
    // A small text with a 5 MB picture (random bytes, stored uncompressed), as a scanned-in form would carry.
    const small = dir('small.docx');
    await writeLargeDocx(small, 10);
    const zip = await JSZip.loadAsync(readFileSync(small));
    zip.file('word/media/image1.png', randomBytes(5 * 1024 * 1024), { compression: 'STORE' });
    const big = dir('large.docx');
    writeFileSync(big, await zip.generateAsync({ type: 'nodebuffer' }));
    expect(statSync(big).size).toBeGreaterThan(REUSE_MAX_FILE_BYTES);
    expect((await extractDocument(big, DOCX)).blocks.length).toBeGreaterThan(0);
    expect(extractionWorkerStats().idle).toBe(0);
  });
});
