import { AppError, ErrorCode, Logger } from '@kb/common';
import { Delivery } from '@kb/common';
import { DocumentProgress, ProcessRequestedEvent, ProgressChangedEvent, ProgressStage, StatusChangedEvent } from '@kb/events';
import { retrievalV1 } from '@kb/proto';
import { chunkToProto } from '@kb/knowledge';
import type { ObjectStorage } from '@kb/storage';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { Chunk, ChunkOptions, chunkDocument } from '../chunking';
import {
  chunkWordBoxes,
  extractDeferredOcrPages,
  extractDocument,
  ExtractedDocument,
  ExtractionError,
  PageLayout,
  PageSize,
  readDeferredLayout,
} from '../extraction';
import { ProgressReporter } from './progress';
import { ReadyFirstGate } from './ready-first';
import { WorkLimiter } from './work-limiter';

export interface DocumentProcessorDeps {
  storage: ObjectStorage;
  /** Replaces the document's chunks in the index (idempotent). */
  indexChunks: (orgId: string, request: retrievalV1.IndexDocumentRequest) => Promise<void>;
  /** Removes every chunk of the document from the index (idempotent). */
  deleteChunks: (orgId: string, documentId: string) => Promise<void>;
  publishStatus: (event: StatusChangedEvent) => Promise<void>;
  /** Publishes the document's progress (throttled by {@link ProgressReporter}); none when absent. */
  publishProgress?: (event: ProgressChangedEvent) => Promise<void>;
  /** Least time between two progress events of one document (ms); default {@link PROGRESS_MIN_INTERVAL_MS}. */
  progressIntervalMs?: number;
  /** Enrichment: embeds the document's indexed chunks (retrieval no-ops without an embedding model). */
  embedDocument?: (orgId: string, documentId: string) => Promise<void>;
  workDir: string;
  logger: Logger;
  /** Per-document time limit (ms), for extraction and enrichment together. */
  timeoutMs: number;
  maxPages: number;
  /** Largest extracted text per document in bytes (see ExtractOptions.maxTextBytes). */
  maxTextBytes?: number;
  /** Largest declared uncompressed size of an Office package in bytes (see ExtractOptions.maxUnzippedBytes). */
  maxUnzippedBytes?: number;
  /** Heap cap (MB) of the thread that parses a DOCX/XLSX/PPTX/HTML file (see ExtractOptions.maxHeapMb). */
  maxHeapMb?: number;
  chunkOptions?: ChunkOptions;
  /**
   * Enrichment steps run in this order after `ready` and before `completed`
   * (default {@link defaultEnrichmentSteps}).
   */
  enrichmentSteps?: EnrichmentStep[];
  /**
   * Documents in flight, weighted by their size in bytes (`INGESTION_INFLIGHT_BYTES`): many small
   * documents overlap their I/O (download, index, status events), large ones run few at a time
   * so memory stays bounded. Default: no limit beyond the consumer's concurrency.
   */
  inflightBytes?: WorkLimiter;
  /**
   * CPU-bound work (extraction + chunking, OCR of deferred pages), weight 1 per document
   * (`INGESTION_EXTRACTION_CONCURRENCY`). Default: no limit beyond the consumer's concurrency.
   */
  extractionSlots?: WorkLimiter;
  /**
   * Documents in their enrichment steps at once, weight 1 per document (`INGESTION_ENRICHMENT_CONCURRENCY`):
   * the documents behind them extract and become `ready` meanwhile instead of waiting for the embedding
   * model. The wait for a slot does not count against the per-document time limit. Default: no limit
   * beyond the consumer's concurrency.
   */
  enrichmentSlots?: WorkLimiter;
  /**
   * Enrichment waits until no document of this processor is before `ready` ({@link ReadyFirstGate}:
   * a bulk upload is searchable first, then enriched). Default: enrichment starts at `ready`.
   */
  readyFirst?: ReadyFirstGate;
}

/**
 * State of one document during enrichment. `chunks` are the chunks currently in the index;
 * a step that changes them must call `reindex()` so that the index and `chunks` agree before the
 * next step runs (for example an embedding step that embeds the stored chunks).
 */
export interface EnrichmentState {
  readonly event: ProcessRequestedEvent;
  /** Local copy of the original file (removed after the pipeline ends). */
  readonly filePath: string;
  extracted: ExtractedDocument;
  chunks: Chunk[];
  /** Time left of the per-document budget, in ms. */
  remainingMs(): number;
  /** Re-chunks `extracted`, replaces the document's chunks in the index and updates `chunks`. */
  reindex(): Promise<void>;
  /** Runs CPU-bound work (OCR) in one of the service's extraction slots. */
  cpuBound<T>(fn: () => Promise<T>): Promise<T>;
  /** The document's progress: a step reports its pages here (its stage is reported when it starts). */
  readonly progress: ProgressReporter;
  readonly logger: Logger;
}

/**
 * One enrichment step between `ready` and `completed` (decisions.md "Documents"). `applies`
 * decides whether the document needs it; `run` does the work and must be idempotent (a
 * re-delivered document runs every step again). Throw `ExtractionError` for a permanent failure
 * with a user-facing message (the document ends `failed`), anything else for a transient one
 * (the delivery is retried with backoff).
 */
export interface EnrichmentStep {
  readonly name: string;
  /** The progress stage shown while the step runs. */
  readonly stage: ProgressStage;
  /** Its first progress (pages counted from the state), when more than the stage is known up front. */
  initialProgress?(state: EnrichmentState): DocumentProgress;
  applies(state: EnrichmentState): boolean;
  run(state: EnrichmentState): Promise<void>;
  /**
   * Short CPU-bound work that runs in an extraction slot and needs no enrichment slot: when such
   * steps lead the list, they run before the document waits for one (so they are not queued behind
   * other documents' embeddings).
   */
  readonly withoutEnrichmentSlot?: boolean;
}

/**
 * Enrichment step: the word boxes of a PDF's text layer (`pdftotext -bbox-layout`, about as long
 * again as reading its text), left out of extraction so that the document is searchable (`ready`)
 * sooner. They only place quotes on the page (decisions.md "Where a quote stands"): this step reads
 * them and re-indexes the same chunks with their boxes. When poppler cannot read them the chunks
 * stay without boxes, as before.
 */
export const pageLayoutStep: EnrichmentStep = {
  name: 'page-layout',
  stage: 'indexing',
  withoutEnrichmentSlot: true,
  applies: (state) => state.extracted.layoutDeferred === true,
  async run(state) {
    const before = state.extracted.layout ?? [];
    const layout = await state.cpuBound(() => readDeferredLayout(state.filePath, before, { timeoutMs: state.remainingMs() }));
    state.extracted = { ...state.extracted, layout, layoutDeferred: false };
    const words = (pages: readonly PageLayout[]) => pages.reduce((n, p) => n + p.words.length, 0);
    if (words(layout) > words(before)) await state.reindex();
    state.logger.info({ words: words(layout) }, 'word boxes read');
  },
};

/**
 * Enrichment step: OCR of the image-only pages of a PDF that also has text pages. The text pages
 * are searchable (`ready`) first; this step adds the OCRed pages at their exact page positions
 * and re-indexes.
 */
export const ocrImagePagesStep: EnrichmentStep = {
  name: 'ocr-image-pages',
  stage: 'ocr',
  initialProgress: (state) => ({ stage: 'ocr', pagesDone: 0, pagesTotal: state.extracted.deferredOcrPages?.length ?? 0 }),
  applies: (state) => (state.extracted.deferredOcrPages?.length ?? 0) > 0,
  async run(state) {
    const pages = state.extracted.deferredOcrPages ?? [];
    const ocr = await state.cpuBound(() =>
      extractDeferredOcrPages(state.filePath, pages, {
        timeoutMs: state.remainingMs(),
        onProgress: (stage, done, total) => state.progress.report(stage, done, total),
      }),
    );
    // Blocks are in page order; a stable sort by page puts each OCRed page in its place.
    const blocks = [...state.extracted.blocks, ...ocr.blocks].sort((a, b) => (a.page ?? 0) - (b.page ?? 0));
    // The OCRed pages' words (tesseract's boxes) replace the empty text layer of those pages.
    const layout = state.extracted.layout?.map((p) => (ocr.words.has(p.page) ? { ...p, words: ocr.words.get(p.page)! } : p));
    state.extracted = { ...state.extracted, blocks, deferredOcrPages: [], ...(layout ? { layout } : {}) };
    await state.reindex();
    state.logger.info({ pages: pages.length }, 'image-only pages OCRed');
  },
};

/**
 * The enrichment steps, in order: word boxes first (a quote placed on the page as soon as
 * possible), then OCR of deferred pages (whose words join the layout), then dense embeddings (when
 * an embedding model is configured), so that they embed the final chunks.
 */
export function defaultEnrichmentSteps(embedDocument?: DocumentProcessorDeps['embedDocument']): EnrichmentStep[] {
  const steps = [pageLayoutStep, ocrImagePagesStep];
  return embedDocument ? [...steps, embeddingsStep(embedDocument)] : steps;
}

/**
 * Enrichment step: dense embeddings of the document's final chunks, computed by the retrieval
 * service (`EmbedDocument`; a no-op there when no embedding model is configured).
 */
export function embeddingsStep(embedDocument: NonNullable<DocumentProcessorDeps['embedDocument']>): EnrichmentStep {
  return {
    name: 'embeddings',
    stage: 'embedding',
    applies: () => true,
    run: (state) => embedDocument(state.event.orgId, state.event.documentId),
  };
}

/**
 * Deterministic chunk id (UUID-shaped SHA-1 of document id and chunk index, RFC 4122 §4.3 layout),
 * so a re-delivered document produces the same ids.
 */
export function chunkIdFor(documentId: string, index: number): string {
  const h = createHash('sha1').update(`${documentId}:${index}`).digest('hex');
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * Converts chunker output to the retrieval contract, with the word boxes of each chunk's text
 * aligned from the document's page layout (PDFs; none for other formats).
 */
export function toIndexChunks(event: ProcessRequestedEvent, chunks: Chunk[], layout?: readonly PageLayout[]): retrievalV1.Chunk[] {
  const boxes = chunkWordBoxes(chunks, layout);
  return chunks.map((c, i) =>
    chunkToProto({
      ...c,
      id: chunkIdFor(event.documentId, c.index),
      documentId: event.documentId,
      projectId: event.projectId ?? null,
      fileName: event.fileName,
      chunkIndex: c.index,
      wordBoxes: boxes[i],
    }),
  );
}

/** Page sizes in points of a document with a page layout (PDFs), null otherwise. */
export function pageSizesOf(extracted: ExtractedDocument): PageSize[] | null {
  return extracted.layout ? extracted.layout.map((p) => ({ page: p.page, width: p.width, height: p.height })) : null;
}

/**
 * The ingestion pipeline for one document:
 * 1. fetch the original from object storage (streamed to a private work file);
 * 2. extract text per page (image-only pages of a PDF that has text pages are deferred), chunk,
 *    index (replacing any chunks of an earlier delivery) and report `ready`;
 * 3. run the enrichment steps in order (OCR of deferred pages, ...), then report `completed`.
 * Permanent problems (corrupt, encrypted, too large, no text, time limit) end `failed` with a
 * message a user can act on and the document's chunks removed. Transient failures (storage or
 * index unavailable) throw, so JetStream redelivers with backoff; on the last attempt the
 * document is failed instead of being left in processing.
 */
export class DocumentProcessor {
  private readonly steps: EnrichmentStep[];

  constructor(private readonly deps: DocumentProcessorDeps) {
    this.steps = deps.enrichmentSteps ?? defaultEnrichmentSteps(deps.embedDocument);
  }

  async process(event: ProcessRequestedEvent, delivery: Delivery): Promise<void> {
    const inflight = this.deps.inflightBytes;
    return inflight ? inflight.run(event.sizeBytes ?? inflight.capacity, () => this.processNow(event, delivery)) : this.processNow(event, delivery);
  }

  private async processNow(event: ProcessRequestedEvent, delivery: Delivery): Promise<void> {
    const log = this.deps.logger.child({ document_id: event.documentId, org_id: event.orgId, attempt: delivery.attempt });
    const dir = await mkdtemp(path.join(this.deps.workDir, 'doc-'));
    const cpuBound = <T>(fn: () => Promise<T>) => (this.deps.extractionSlots ? this.deps.extractionSlots.run(1, fn) : fn());
    // The time limit counts work, not the wait for an extraction slot: the clock starts in the slot.
    let started = Date.now();
    /** Where the time to `ready` went (ms), for the `document ready` log line: waiting for an extraction slot, extracting and chunking, indexing. */
    const timings = { slot_wait_ms: 0, extract_ms: 0, index_ms: 0 };
    const received = Date.now();
    const remainingMs = () => Math.max(1, this.deps.timeoutMs - (Date.now() - started));
    let indexed = false;
    log.info({ content_type: event.contentType, size_bytes: event.sizeBytes }, 'processing document');
    const publishProgress = this.deps.publishProgress;
    const progress = new ProgressReporter(
      (p, at) =>
        publishProgress ? publishProgress({ documentId: event.documentId, orgId: event.orgId, progress: p, at: at.toISOString() }) : Promise.resolve(),
      log,
      { minIntervalMs: this.deps.progressIntervalMs },
    );
    /** Uncounts this document from the documents before `ready` (at `ready`, or in `finally` when it ends sooner). */
    const leaveBeforeReady = this.deps.readyFirst?.enter() ?? (() => undefined);
    try {
      const filePath = path.join(dir, 'original');
      const info = await this.deps.storage.stat(event.storageKey);
      if (!info) {
        await this.fail(event, 'The uploaded file is no longer in storage. Upload it again.', false);
        return;
      }
      await this.deps.storage.downloadToFile(event.storageKey, filePath);
      let extracted: ExtractedDocument;
      let chunks: Chunk[];
      try {
        [extracted, chunks] = await cpuBound(async () => {
          started = Date.now();
          timings.slot_wait_ms = started - received;
          progress.report('extracting');
          const doc = await extractDocument(filePath, event.contentType, {
            onProgress: (stage, done, total) => progress.report(stage, done, total),
            timeoutMs: remainingMs(),
            maxPages: this.deps.maxPages,
            maxTextBytes: this.deps.maxTextBytes,
            maxUnzippedBytes: this.deps.maxUnzippedBytes,
            maxHeapMb: this.deps.maxHeapMb,
            deferOcr: this.steps.includes(ocrImagePagesStep),
            deferLayout: this.steps.includes(pageLayoutStep),
          });
          progress.report('chunking');
          const chunked = chunkDocument(doc, this.deps.chunkOptions);
          timings.extract_ms = Date.now() - started;
          return [doc, chunked] as const;
        });
      } catch (error) {
        if (error instanceof ExtractionError) {
          log.info({ code: error.code }, 'extraction failed');
          await this.fail(event, error.message, delivery.attempt > 1);
          return;
        }
        throw error;
      }
      if (chunks.length === 0) {
        await this.fail(
          event,
          'No text could be extracted from this file. If it is a scan, upload a version with selectable text or an image format for OCR.',
          false,
        );
        return;
      }
      const index = async (c: Chunk[], layout: readonly PageLayout[] | undefined) => {
        progress.report('indexing');
        await this.deps.indexChunks(event.orgId, {
          documentId: event.documentId,
          projectId: event.projectId ?? undefined,
          chunks: toIndexChunks(event, c, layout),
          corpus: retrievalV1.Corpus.CORPUS_ORG,
        });
        indexed = true;
      };
      const indexStarted = Date.now();
      await index(chunks, extracted.layout);
      timings.index_ms = Date.now() - indexStarted;
      const status = (s: 'ready' | 'completed', st: { chunks: Chunk[]; extracted: ExtractedDocument }, next: DocumentProgress | null = null) =>
        this.deps.publishStatus({
          documentId: event.documentId,
          orgId: event.orgId,
          status: s,
          chunkCount: st.chunks.length,
          pageCount: st.extracted.pageCount,
          pageSizes: pageSizesOf(st.extracted),
          errorMessage: null,
          progress: next,
          at: new Date().toISOString(),
        });

      const state: EnrichmentState = {
        event,
        filePath,
        extracted,
        chunks,
        remainingMs,
        logger: log,
        cpuBound,
        progress,
        reindex: async () => {
          progress.report('chunking');
          const next = chunkDocument(state.extracted, this.deps.chunkOptions);
          await index(next, state.extracted.layout);
          state.chunks = next;
        },
      };
      // `ready` carries the progress of the first enrichment step, so a small document shows it
      // without a progress event of its own.
      const first = this.steps.find((s) => s.applies(state));
      const firstProgress = first ? (first.initialProgress?.(state) ?? { stage: first.stage, pagesDone: null, pagesTotal: null }) : null;
      if (firstProgress) progress.report(firstProgress.stage, firstProgress.pagesDone, firstProgress.pagesTotal);
      await status('ready', { chunks, extracted }, firstProgress);
      log.info({ chunks: chunks.length, pages: extracted.pageCount, ms: Date.now() - started, ...timings }, 'document ready');
      // Searchable now; what is left waits on the enrichment slots (the embedding model's pace), so the
      // consumer slot takes the next document meanwhile (docs/ingestion.md "Throughput and scaling").
      // The delivery stays live and is acknowledged at `completed`, so a crash still redelivers it.
      if (first) delivery.releaseSlot?.();
      leaveBeforeReady();

      /** Runs the enrichment steps in order; false when one failed for good (the document is then `failed`). */
      const enrich = async (steps: readonly EnrichmentStep[]): Promise<boolean> => {
        for (const step of steps) {
          if (!step.applies(state)) continue;
          const stepStarted = Date.now();
          const initial = step.initialProgress?.(state);
          progress.report(step.stage, initial?.pagesDone ?? null, initial?.pagesTotal ?? null);
          try {
            await step.run(state);
          } catch (error) {
            if (error instanceof ExtractionError) {
              log.info({ step: step.name, code: error.code }, 'enrichment step failed');
              await this.fail(event, error.message, indexed);
              return false;
            }
            throw error;
          }
          log.info({ step: step.name, ms: Date.now() - stepStarted }, 'enrichment step done');
        }
        return true;
      };
      // The time limit counts work, not the wait for other documents to be ready or for an enrichment slot.
      const gateWaitStarted = Date.now();
      if (first && this.deps.readyFirst) {
        await this.deps.readyFirst.idle();
        log.info({ ms: Date.now() - gateWaitStarted }, 'enrichment starts');
      }
      started += Date.now() - gateWaitStarted;
      const lead = this.steps.findIndex((s) => !s.withoutEnrichmentSlot);
      const [slotFree, slotted] = lead < 0 ? [this.steps, []] : [this.steps.slice(0, lead), this.steps.slice(lead)];
      if (!(await enrich(slotFree))) return;
      const slots = this.deps.enrichmentSlots;
      const slotWaitStarted = Date.now();
      const enrichSlotted = () => {
        started += Date.now() - slotWaitStarted;
        return enrich(slotted);
      };
      const enriched = slots && slotted.some((s) => s.applies(state)) ? await slots.run(1, enrichSlotted) : await enrichSlotted();
      if (!enriched) return;
      chunks = state.chunks;
      await progress.close();
      await status('completed', state);
      log.info({ chunks: chunks.length, pages: state.extracted.pageCount, ms: Date.now() - started }, 'document processed');
    } catch (error) {
      if (delivery.isLastAttempt) {
        log.error({ err: error }, 'document failed after the last attempt');
        const reason = error instanceof AppError && error.code === ErrorCode.SERVICE_UNAVAILABLE ? ' (a backing service was unavailable)' : '';
        await this.fail(event, `Processing failed after ${delivery.maxDeliver} attempts${reason}. Upload the file again later.`, true);
        return;
      }
      throw error;
    } finally {
      leaveBeforeReady();
      await progress.close();
      await rm(dir, { recursive: true, force: true });
    }
  }

  /**
   * Reports `failed`. When chunks of this document may be in the index (this or an earlier
   * delivery indexed them), removes them first so a failed document is never cited; if the index
   * is unreachable the failure is still reported (the documents service deletes chunks of failed
   * documents it sweeps, and a later delete of the document removes them).
   */
  private async fail(event: ProcessRequestedEvent, message: string, mayBeIndexed: boolean): Promise<void> {
    if (mayBeIndexed) {
      await this.deps
        .deleteChunks(event.orgId, event.documentId)
        .catch((err) => this.deps.logger.warn({ err, document_id: event.documentId }, 'could not remove the chunks of a failed document'));
    }
    await this.deps.publishStatus({
      documentId: event.documentId,
      orgId: event.orgId,
      status: 'failed',
      chunkCount: null,
      pageCount: null,
      errorMessage: message,
      at: new Date().toISOString(),
    });
  }
}
