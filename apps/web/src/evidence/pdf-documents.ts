/**
 * pdf.js for the evidence viewer, loaded on first use (a dynamic import: the first screen of the
 * workspace does not carry pdfjs-dist), and the PDF documents it opened, kept per document id.
 *
 * A document is cached by its id, not by its address: the presigned download address changes on
 * every GET /api/v2/documents/{id}/download, so the address only matters for the first load. Each
 * user of a document holds a reference; when the last one lets go, the document is destroyed (its
 * worker-side data freed) after {@link RELEASE_DELAY_MS}, so switching between sources of the same
 * file, or between its pages, does not download it again.
 */
import type { PDFDocumentLoadingTask, PDFDocumentProxy } from 'pdfjs-dist';
// The worker as an asset of the build (Vite's `?url`): a file of its own, fetched by pdf.js when it
// starts its worker, not part of any chunk.
import workerUrl from 'pdfjs-dist/build/pdf.worker.min.mjs?url';
import { useEffect, useState } from 'react';

/** The pdf.js module (pdfjs-dist's `build/pdf.mjs`). */
export type PdfJs = typeof import('pdfjs-dist');

/** How long (ms) an unused document stays open, for a viewer that comes back to it (another source of the same file). */
export const RELEASE_DELAY_MS = 30_000;

let pdfjs: Promise<PdfJs> | null = null;

/**
 * pdf.js, imported on the first call, with its worker configured.
 * @throws what the dynamic import throws (the chunk could not be fetched); the next call tries again.
 */
export function loadPdfJs(): Promise<PdfJs> {
  if (!pdfjs) {
    pdfjs = import('pdfjs-dist').then(
      (mod) => {
        mod.GlobalWorkerOptions.workerSrc = workerUrl;
        return mod;
      },
      (error: unknown) => {
        pdfjs = null;
        throw error;
      },
    );
  }
  return pdfjs;
}

interface Entry {
  task: Promise<PDFDocumentLoadingTask>;
  document: Promise<PDFDocumentProxy>;
  refs: number;
  timer: ReturnType<typeof setTimeout> | null;
}

const open = new Map<string, Entry>();

function destroy(documentId: string, entry: Entry): void {
  if (open.get(documentId) === entry) open.delete(documentId);
  void entry.task.then((task) => task.destroy()).catch(() => undefined);
}

/**
 * Opens (or reuses) document `documentId` from `url` and holds a reference to it until `release` is
 * called. No bearer header is sent: the address is a presigned one that carries its own authorization.
 * A failed load is forgotten at once, so the next acquire tries again (with a fresh address).
 * @returns the document (a promise that rejects with pdf.js's error: InvalidPDFException for a file
 *   that is not a PDF, ResponseException for an HTTP failure such as an expired address) and `release`.
 */
export function acquirePdf(documentId: string, url: string): { document: Promise<PDFDocumentProxy>; release: () => void } {
  let entry = open.get(documentId);
  if (!entry) {
    // pdf.js 6 never evaluates strings (its `isEvalSupported` option is gone), as the page's CSP requires.
    const task = loadPdfJs().then((mod) => mod.getDocument({ url, enableXfa: false }));
    const created: Entry = { task, document: task.then((t) => t.promise), refs: 0, timer: null };
    created.document.catch(() => destroy(documentId, created));
    open.set(documentId, created);
    entry = created;
  }
  const held = entry;
  held.refs += 1;
  if (held.timer) {
    clearTimeout(held.timer);
    held.timer = null;
  }
  let released = false;
  return {
    document: held.document,
    release: () => {
      if (released) return;
      released = true;
      held.refs -= 1;
      if (held.refs > 0 || open.get(documentId) !== held) return;
      held.timer = setTimeout(() => {
        if (held.refs === 0) destroy(documentId, held);
      }, RELEASE_DELAY_MS);
    },
  };
}

/** State of {@link usePdfDocument}: the open document, or the error of its load, or neither while loading. */
export interface PdfDocumentState {
  document: PDFDocumentProxy | null;
  error: unknown;
}

/**
 * The PDF document `documentId`, opened from `url` (null: not known yet) through the shared cache of
 * {@link acquirePdf}, held while the component is mounted. A change of `url` alone does not reload a
 * document already open (the presigned address changes with each download call).
 */
export function usePdfDocument(documentId: string, url: string | null): PdfDocumentState {
  const [state, setState] = useState<PdfDocumentState & { documentId: string | null }>({ document: null, error: null, documentId: null });
  const hasUrl = url !== null;
  useEffect(() => {
    if (url === null) return;
    let live = true;
    const held = acquirePdf(documentId, url);
    held.document.then(
      (document) => live && setState({ document, error: null, documentId }),
      (error: unknown) => live && setState({ document: null, error, documentId }),
    );
    return () => {
      live = false;
      held.release();
    };
    // `url` is read on the run for a document only: a new presigned address of the same document is not a reason to reload it.
  }, [documentId, hasUrl]); // eslint-disable-line react-hooks/exhaustive-deps
  return state.documentId === documentId && hasUrl ? { document: state.document, error: state.error } : { document: null, error: null };
}
