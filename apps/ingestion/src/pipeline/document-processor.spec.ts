import { AppError, createLogger, ErrorCode } from '@kb/common';
import { ProcessRequestedEvent, ProgressChangedEvent, StatusChangedEvent } from '@kb/events';
import { retrievalV1 } from '@kb/proto';
import { LocalObjectStorage } from '@kb/storage';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { corpus, hasTool, wordOverlap } from '../extraction/testing/corpus';
import { writeLargeDocx, writeLyingZipBomb } from '../extraction/testing/large-files';
import { readFileSync } from 'node:fs';
import { DocumentProcessor, EnrichmentStep, embeddingsStep, ocrImagePagesStep, pageLayoutStep } from './document-processor';
import { ProgressReporter } from './progress';
import { ReadyFirstGate } from './ready-first';
import { WorkLimiter } from './work-limiter';

const withOcr = hasTool('tesseract') && hasTool('pdftoppm') && hasTool('pdfunite') ? it : it.skip;

/**
 * The pipeline against real extraction, OCR and local object storage; the index and the status
 * stream are recorded (they are gRPC/NATS boundaries, exercised end to end in test/e2e).
 */
jest.setTimeout(120_000);

describe('DocumentProcessor', () => {
  let root: string;
  let storage: LocalObjectStorage;
  let timeline: string[];
  let index: Map<string, retrievalV1.Chunk[]>;
  let statuses: StatusChangedEvent[];

  function processor(steps?: EnrichmentStep[], extra: Partial<ConstructorParameters<typeof DocumentProcessor>[0]> = {}) {
    return new DocumentProcessor({
      storage,
      indexChunks: async (_org, req) => {
        timeline.push(`index:${req.chunks?.length}`);
        index.set(req.documentId, req.chunks);
      },
      deleteChunks: async (_org, id) => {
        timeline.push('delete');
        index.delete(id);
      },
      publishStatus: async (e) => {
        timeline.push(`status:${e.status}`);
        statuses.push(e);
      },
      workDir: root,
      logger: createLogger('ingestion-spec'),
      timeoutMs: 120_000,
      maxPages: 100,
      enrichmentSteps: steps,
      ...extra,
    });
  }

  function stored(file: string, contentType = 'application/pdf'): ProcessRequestedEvent {
    const key = `orgs/o1/documents/${randomUUID()}`;
    mkdirSync(path.dirname(path.join(root, 'objects', key)), { recursive: true });
    copyFileSync(file, path.join(root, 'objects', key));
    return {
      documentId: randomUUID(),
      orgId: 'o1',
      projectId: null,
      fileName: path.basename(file),
      contentType,
      sizeBytes: 1,
      storageKey: key,
      requestedAt: new Date().toISOString(),
    };
  }

  const first = { attempt: 1, maxDeliver: 3, isLastAttempt: false };

  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'kb-pipeline-spec-'));
    storage = new LocalObjectStorage({ rootDir: root, publicBaseUrl: 'http://127.0.0.1:1', signingSecret: 'x'.repeat(32), maxUploadBytes: 1 << 30 });
    await storage.ensureReady();
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  beforeEach(() => {
    timeline = [];
    index = new Map();
    statuses = [];
  });

  withOcr('makes the text pages of a mixed PDF searchable (ready) before OCRing its scanned page (completed), on exact pages', async () => {
    // Page 1: OSHA2001.pdf page 25 (text layer); page 2: the scanned Linn brochure (image only).
    const mixed = path.join(root, 'mixed.pdf');
    execFileSync('pdfseparate', ['-f', '25', '-l', '25', corpus('pdf/OSHA2001.pdf'), path.join(root, 'osha-25.pdf')]);
    execFileSync('pdfunite', [path.join(root, 'osha-25.pdf'), corpus('pdf_scanned/ocrmypdf_linn.pdf'), mixed]);
    const event = stored(mixed);
    const embedded: number[] = [];
    // A later step (as dense embeddings will be) sees the final, OCR-inclusive chunks.
    const after: EnrichmentStep = { name: 'after-ocr', stage: 'embedding', applies: () => true, run: async (s) => void embedded.push(s.chunks.length) };
    await processor([ocrImagePagesStep, after]).process(event, first);

    expect(timeline[0]).toMatch(/^index:\d+$/);
    expect(timeline[1]).toBe('status:ready');
    expect(timeline[2]).toMatch(/^index:\d+$/);
    expect(timeline[3]).toBe('status:completed');
    const [ready, completed] = statuses;
    expect(completed.chunkCount!).toBeGreaterThan(ready.chunkCount!);
    expect(embedded).toEqual([completed.chunkCount]);
    expect({ ready: ready.pageCount, completed: completed.pageCount }).toEqual({ ready: 2, completed: 2 });

    const chunks = index.get(event.documentId)!;
    expect(chunks).toHaveLength(completed.chunkCount!);
    expect(chunks.find((c) => /headed by a Director/.test(c.text.replace(/\s+/g, ' ')))).toMatchObject({ startPage: 1, endPage: 1 });
    const page2 = chunks
      .filter((c) => c.startPage === 2)
      .map((c) => c.text)
      .join('\n');
    expect(wordOverlap(readFileSync(corpus('pdf_scanned/ocrmypdf_linn.groundtruth.txt'), 'utf8'), page2)).toBeGreaterThanOrEqual(0.85);
    expect(chunks.map((c) => c.chunkIndex)).toEqual(chunks.map((_, i) => i));
  });

  withOcr(
    'reports each stage and OCR progress page by page on a scanned PDF, ready names the next stage, nothing after completed',
    async () => {
      // A 2-page scan without a text layer: OCRed before `ready` (there is nothing to search before).
      const event = stored(corpus('pdf_scanned/dol_ls-201_notice_of_injury_or_death_SCANNED.pdf'));
      const progress: ProgressChangedEvent[] = [];
      const embedded: string[] = [];
      await processor([ocrImagePagesStep, embeddingsStep(async (_org, id) => void embedded.push(id))], {
        // Every change is published (the default throttles to one event a second).
        progressIntervalMs: 0,
        publishProgress: async (e) => {
          timeline.push(`progress:${e.progress.stage}`);
          progress.push(e);
        },
      }).process(event, first);

      const ocr = progress.filter((e) => e.progress.stage === 'ocr').map((e) => [e.progress.pagesDone, e.progress.pagesTotal]);
      expect(ocr).toEqual([
        [0, 2],
        [1, 2],
        [2, 2],
      ]);
      expect(progress.filter((e) => e.progress.stage === 'extracting').map((e) => e.progress.pagesTotal)).toContain(2);
      expect(progress.every((e) => e.documentId === event.documentId && e.orgId === 'o1')).toBe(true);
      expect(progress[0].progress).toEqual({ stage: 'extracting', pagesDone: null, pagesTotal: null });
      const stages = progress.map((e) => e.progress.stage);
      expect(stages.filter((t, i) => t !== stages[i - 1])).toEqual(['extracting', 'ocr', 'chunking', 'indexing', 'embedding']);
      expect(statuses.map((s) => [s.status, s.progress])).toEqual([
        ['ready', { stage: 'embedding', pagesDone: null, pagesTotal: null }],
        ['completed', null],
      ]);
      // Nothing is published after `completed`, and the events are in time order.
      expect(timeline[timeline.length - 1]).toBe('status:completed');
      expect(progress.map((e) => e.at)).toEqual([...progress.map((e) => e.at)].sort());
      expect(embedded).toEqual([event.documentId]);
    },
    300_000,
  );

  it('sends no progress event for a document finished within the first interval (its status events suffice)', async () => {
    const event = stored(corpus('markdown/datica_08-auditing_policy.md'), 'text/markdown');
    const progress: ProgressChangedEvent[] = [];
    await processor([], { progressIntervalMs: 3_600_000, publishProgress: async (e) => void progress.push(e) }).process(event, first);
    expect(statuses.map((s) => s.status)).toEqual(['ready', 'completed']);
    expect(progress).toEqual([]);
  });

  it('ProgressReporter publishes the latest state once per interval, skips repeats, and nothing once closed', async () => {
    let clock = 0;
    const sent: string[] = [];
    const reporter = new ProgressReporter(async (p) => void sent.push(`${p.stage}:${p.pagesDone}/${p.pagesTotal}`), createLogger('spec'), {
      minIntervalMs: 10,
      now: () => clock,
    });
    clock = 10;
    reporter.report('ocr', 0, 3); // due: sent at once
    reporter.report('ocr', 1, 3); // within the interval: pending (a timer)
    reporter.report('ocr', 2, 3); // replaces the pending state
    await reporter.close(); // drops the pending state
    reporter.report('indexing');
    expect(sent).toEqual(['ocr:0/3']);
    expect(reporter.current()).toEqual({ stage: 'ocr', pagesDone: 2, pagesTotal: 3 });
  });

  it('makes a text PDF searchable (ready) before reading its word boxes, then re-indexes the same chunks with them (completed)', async () => {
    const event = stored(corpus('pdf/fedramp_guide_poam_rev5.pdf'));
    const calls: retrievalV1.Chunk[][] = [];
    await processor([pageLayoutStep], {
      indexChunks: async (_org, req) => {
        timeline.push(`index:${req.chunks?.length}`);
        calls.push(req.chunks);
        index.set(req.documentId, req.chunks);
      },
    }).process(event, first);

    expect(timeline.map((t) => t.replace(/\d+$/, 'N'))).toEqual(['index:N', 'status:ready', 'index:N', 'status:completed']);
    const [atReady, atCompleted] = calls;
    // The same chunks, boxless while only searchable, then with a box for nearly every word.
    expect(atCompleted.map((c) => [c.id, c.text])).toEqual(atReady.map((c) => [c.id, c.text]));
    expect(atReady.every((c) => c.wordBoxes.length === 0)).toBe(true);
    const words = atCompleted.reduce((n, c) => n + (c.text.match(/\S+/g) ?? []).length, 0);
    expect(atCompleted.reduce((n, c) => n + c.wordBoxes.length, 0) / words).toBeGreaterThan(0.95);
    // `ready` already gives the page sizes (letter and tabloid pages), equal to the word boxes' own.
    const [ready, completed] = statuses;
    expect(ready.progress).toEqual({ stage: 'indexing', pagesDone: null, pagesTotal: null });
    expect(ready.pageSizes).toHaveLength(37);
    expect(new Set(ready.pageSizes!.map((p) => `${p.width}x${p.height}`))).toEqual(new Set(['612x792', '1224x792']));
    expect(completed.pageSizes).toEqual(ready.pageSizes);
  });

  it('produces the same chunk ids on a re-delivery (the index replaces, never duplicates)', async () => {
    const event = stored(corpus('pdf/dol_osha-200_log_and_summary.pdf'));
    await processor().process(event, first);
    const once = index.get(event.documentId)!.map((c) => c.id);
    await processor().process(event, { attempt: 2, maxDeliver: 3, isLastAttempt: false });
    expect(index.get(event.documentId)!.map((c) => c.id)).toEqual(once);
    expect(new Set(once).size).toBe(once.length);
  });

  it('retries a transient index failure (throws), and fails with the reason on the last attempt, removing chunks', async () => {
    const event = stored(corpus('pdf/dol_osha-101_injury_illness_incident_report.pdf'));
    const down = processor(undefined, {
      indexChunks: async () => {
        timeline.push('index:down');
        throw new AppError(ErrorCode.SERVICE_UNAVAILABLE, 'retrieval unavailable');
      },
    });
    await expect(down.process(event, first)).rejects.toThrow(/unavailable/);
    expect(statuses).toEqual([]);
    await down.process(event, { attempt: 3, maxDeliver: 3, isLastAttempt: true });
    expect(timeline.slice(-2)).toEqual(['delete', 'status:failed']);
    expect(statuses[0].errorMessage).toMatch(/failed after 3 attempts \(a backing service was unavailable\)/);
  });

  (hasTool('qpdf') ? it : it.skip)('fails a password-protected PDF with a message a user can act on (qpdf-encrypted copy)', async () => {
    const locked = path.join(root, 'locked.pdf');
    execFileSync('qpdf', ['--encrypt', 'secret', 'owner', '256', '--', corpus('pdf/dol_osha-101_injury_illness_incident_report.pdf'), locked]);
    await processor().process(stored(locked), first);
    expect(statuses[0]).toMatchObject({ status: 'failed', errorMessage: expect.stringMatching(/password-protected/) });
  });

  it('fails a document over the page limit, saying what to do', async () => {
    await processor(undefined, { maxPages: 10 }).process(stored(corpus('pdf/OSHA2001.pdf')), first);
    expect(statuses[0]).toMatchObject({ status: 'failed', errorMessage: expect.stringMatching(/40 pages, more than the limit of 10; split it/) });
  });

  it('stops a PDF whose text outgrows the budget (PDF bomb guard) and refuses an oversized text file before reading it', async () => {
    await processor(undefined, { maxTextBytes: 20_000 }).process(stored(corpus('pdf/OSHA2001.pdf')), first);
    expect(statuses[0]).toMatchObject({
      status: 'failed',
      errorMessage: expect.stringMatching(/more text than accepted, more than the limit of 20 KB per document; split it/),
    });
    await processor(undefined, { maxTextBytes: 100_000 }).process(stored(corpus('csv/osha_fatality_catastrophe_events_2013-06-15.csv'), 'text/csv'), first);
    expect(statuses[1]).toMatchObject({ status: 'failed', errorMessage: expect.stringMatching(/holds about 306 KB of text, more than the limit of 98 KB/) });
  });

  it('with one enrichment slot, a document behind a slow embedding becomes ready meanwhile, and its wait for the slot does not count against its time limit', async () => {
    // The first embedding to start holds the only enrichment slot until released; the other document
    // is `ready` while it waits, then embeds. Its time limit (3 s) is shorter than the wait.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const embedded: string[] = [];
    let holder: string | null = null;
    const a = stored(corpus('pdf/OSHA2001.pdf'));
    const b = stored(corpus('pdf/fedramp_extensions_rev4.pdf'));
    const p = processor(
      [
        embeddingsStep(async (_org, id) => {
          holder ??= id;
          if (id === holder) await held;
          embedded.push(id);
        }),
      ],
      { enrichmentSlots: new WorkLimiter(1), timeoutMs: 3_000 },
    );
    const statusOf = (id: string) => statuses.filter((e) => e.documentId === id).map((e) => e.status);
    const first = p.process(a, { attempt: 1, maxDeliver: 3, isLastAttempt: false });
    const second = p.process(b, { attempt: 1, maxDeliver: 3, isLastAttempt: false });
    await new Promise((r) => setTimeout(r, 4_000));
    expect(statusOf(a.documentId)).toEqual(['ready']);
    expect(statusOf(b.documentId)).toEqual(['ready']);
    expect(embedded).toEqual([]);
    release();
    await Promise.all([first, second]);
    const other = holder === a.documentId ? b.documentId : a.documentId;
    expect(embedded).toEqual([holder, other]);
    expect(statusOf(a.documentId)).toEqual(['ready', 'completed']);
    expect(statusOf(b.documentId)).toEqual(['ready', 'completed']);
  });

  it("reads a PDF's word boxes while another document's embedding holds the only enrichment slot", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const a = stored(corpus('pdf/fedramp_extensions_rev4.pdf'));
    const b = stored(corpus('pdf/dol_osha-101_injury_illness_incident_report.pdf'));
    const boxed = new Set<string>();
    const p = processor(
      [
        pageLayoutStep,
        embeddingsStep(async (_org, id) => {
          if (id === a.documentId) await held;
          timeline.push(`embed:${id === a.documentId ? 'a' : 'b'}`);
        }),
      ],
      {
        enrichmentSlots: new WorkLimiter(1),
        indexChunks: async (_org, req) => {
          if (req.chunks.some((c) => c.wordBoxes.length > 0)) boxed.add(req.documentId === a.documentId ? 'a' : 'b');
          index.set(req.documentId, req.chunks);
        },
      },
    );
    const done = p.process(a, first);
    await new Promise((r) => setTimeout(r, 1_500)); // A holds the slot, blocked in its embedding
    const second = p.process(b, first);
    for (let i = 0; i < 60 && !boxed.has('b'); i++) await new Promise((r) => setTimeout(r, 50));
    expect([...boxed].sort()).toEqual(['a', 'b']);
    expect(timeline.filter((t) => t.startsWith('embed:'))).toEqual([]);
    release();
    await Promise.all([done, second]);
    expect(timeline.filter((t) => t.startsWith('embed:'))).toEqual(['embed:a', 'embed:b']);
  });

  it('searchable first: a ready document is enriched only once the other document in flight is ready too, and that wait is not work time', async () => {
    // B's index call is held, so B stays before `ready`; A is ready meanwhile and must not embed yet.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const a = stored(corpus('pdf/fedramp_extensions_rev4.pdf'));
    const b = stored(corpus('pdf/dol_osha-101_injury_illness_incident_report.pdf'));
    const gate = new ReadyFirstGate();
    const p = processor([embeddingsStep(async (_org, id) => void timeline.push(`embed:${id === a.documentId ? 'a' : 'b'}`))], {
      readyFirst: gate,
      timeoutMs: 3_000,
      indexChunks: async (_org, req) => {
        if (req.documentId === b.documentId) await held;
        index.set(req.documentId, req.chunks);
      },
      publishStatus: async (e) => {
        timeline.push(`${e.status}:${e.documentId === a.documentId ? 'a' : 'b'}`);
        statuses.push(e);
      },
    });
    const done = [p.process(a, first), p.process(b, first)];
    await new Promise((r) => setTimeout(r, 4_000));
    expect(timeline).toEqual(['ready:a']);
    expect(gate.pending()).toBe(1);
    release();
    await Promise.all(done);
    expect(timeline.slice(0, 2)).toEqual(['ready:a', 'ready:b']);
    expect([...timeline.slice(2)].sort()).toEqual(['completed:a', 'completed:b', 'embed:a', 'embed:b']);
    expect(statuses.filter((e) => e.status === 'failed')).toEqual([]);
    expect(gate.pending()).toBe(0);
  });

  it('frees its consumer slot once ready, before the enrichment that follows; a document with nothing to enrich keeps it', async () => {
    const released = (id: string) => () => void timeline.push(`release:${id}`);
    const embeddings = embeddingsStep(async () => void timeline.push('embed'));
    const a = stored(corpus('pdf/OSHA2001.pdf'));
    await processor([embeddings]).process(a, { ...first, releaseSlot: released('a') });
    expect(timeline.filter((t) => !t.startsWith('index:'))).toEqual(['status:ready', 'release:a', 'embed', 'status:completed']);
    timeline = [];
    const b = stored(corpus('pdf/OSHA2001.pdf'));
    await processor([]).process(b, { ...first, releaseSlot: released('b') });
    expect(timeline.filter((t) => !t.startsWith('index:'))).toEqual(['status:ready', 'status:completed']);
  });

  it('fails a document that exceeds the time limit, saying so', async () => {
    await processor(undefined, { timeoutMs: 1 }).process(stored(corpus('pdf/debian-policy-4.6.2.0.pdf')), first);
    expect(statuses[0]).toMatchObject({ status: 'failed', errorMessage: expect.stringMatching(/took longer than .* and was stopped/) });
  });

  const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

  it('fails a zip-bomb DOCX and one that needs more than the heap cap, with their messages, then processes the next document', async () => {
    const bomb = path.join(root, 'bomb.docx');
    await writeLyingZipBomb(bomb, 100 * 1024 * 1024);
    const big = path.join(root, 'big.docx');
    await writeLargeDocx(big, 20_000);
    const p = processor();
    await p.process(stored(bomb, DOCX), first);
    await processor(undefined, { maxHeapMb: 48 }).process(stored(big, DOCX), first);
    const next = stored(corpus('docx/fedramp_oscal_Overview.docx'), DOCX);
    await p.process(next, first);
    expect(statuses.map((e) => [e.status, e.errorMessage ?? null])).toEqual([
      [
        'failed',
        expect.stringMatching(
          /^The Word document was rejected as a possible zip bomb: its part "word\/document.xml" inflates to more than the 4096 bytes its header declares/,
        ),
      ],
      [
        'failed',
        'The Word document needs more than 48 MB of memory to read, more than the limit per document; split it into smaller files and upload them separately.',
      ],
      ['ready', null],
      ['completed', null],
    ]);
    expect(index.get(next.documentId)!.length).toBeGreaterThan(0);
  });
});
