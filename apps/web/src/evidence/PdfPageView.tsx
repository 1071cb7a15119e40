/**
 * One page of a PDF drawn with pdf.js, fitted to its container's width, with the lines of a quote
 * highlighted over it (decisions.md "Where a quote stands (for highlighting)").
 *
 * Geometry, for tests and for anyone placing things over the page: the page element
 * (data-testid="pdf-page") has `data-scale`, the CSS pixels per PDF point of the boxes' space
 * (rendered width / page width in points), and `data-width` / `data-height`, the page size in points;
 * `data-rendered="true"` once the canvas is drawn. Each highlight (data-testid="highlight") carries
 * its box in points (`data-page`, `data-x0`, `data-y0`, `data-x1`, `data-y1`) and is placed at
 * `left = x0 * scale`, `top = y0 * scale`, `width = (x1 - x0) * scale`, `height = (y1 - y0) * scale`
 * CSS pixels from the page element's top-left corner (origin top-left, as the boxes).
 */
import { Center, Loader } from '@mantine/core';
import type { RenderTask } from 'pdfjs-dist';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import type { QuoteBox } from '@kb-platform/sdk/browser';
import { loadPdfJs, usePdfDocument } from './pdf-documents';
import './evidence.css';
import { Failed } from './failed';
import { scrollIntoContainer } from './scroll';

/** Props of {@link PdfPageView}. */
export interface PdfPageViewProps {
  /** The document's id: the key of the cache of open PDFs (the address changes with each download call). */
  documentId: string;
  /** Where to fetch the PDF (a presigned download address); null while it is being asked for. */
  url: string | null;
  /** The page to draw, 1-based. */
  page: number;
  /** Boxes of the quote, PDF points, origin top-left; those of other pages are ignored. */
  boxes: readonly QuoteBox[];
  /**
   * Size of the page in points, the space of `boxes` (GET /api/v2/documents/{id}/pages/{n});
   * defaults to pdf.js's own size of the page (its crop box, rotation applied).
   */
  pageSize?: { width: number; height: number } | null;
  /** Whether to lay pdf.js's transparent text over the canvas, so the page's text can be selected, searched and read by assistive technology (default true). */
  textLayer?: boolean;
  /** Accessible name of the page (default "Page N"). */
  label?: string;
  /** Called once the document is open, with its page count. */
  onDocumentLoad?: (info: { numPages: number }) => void;
  /** When given, the failure Alert offers "Try again" and calls it (e.g. to ask for a fresh address and remount). */
  onRetry?: () => void;
}

interface Geometry {
  /** CSS pixels of the page drawn. */
  width: number;
  height: number;
  /** Size of the page in points, the space of the boxes. */
  pointsWidth: number;
  pointsHeight: number;
  /** pdf.js's scale of the drawing (CSS pixels per point of its own page size), for its text layer. */
  pdfScale: number;
}

/** A one-line description of a pdf.js or other failure. */
function describe(error: unknown): string {
  if (error instanceof Error) {
    if (error.name === 'InvalidPDFException') return 'The file is not a readable PDF.';
    if (error.name === 'ResponseException' || error.name === 'UnexpectedResponseException') return `The PDF could not be downloaded (${error.message}).`;
    return error.message;
  }
  return String(error);
}

const isCancel = (error: unknown) => error instanceof Error && error.name === 'RenderingCancelledException';

/**
 * Draws page `page` of the PDF at `url` into a canvas as wide as the container (sharp on high-density
 * screens: the canvas has devicePixelRatio device pixels per CSS pixel), optionally with pdf.js's text
 * layer, and one highlight element per box of that page; the first highlight is scrolled into view
 * once the page is drawn. Shows a Loader while loading and an Alert when the document or the page
 * cannot be drawn (an address that expired, a page past the last one).
 */
export function PdfPageView({ documentId, url, page, boxes, pageSize, textLayer = true, label, onDocumentLoad, onRetry }: PdfPageViewProps) {
  const { document, error: loadError } = usePdfDocument(documentId, url);
  const outerRef = useRef<HTMLDivElement>(null);
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const textRef = useRef<HTMLDivElement>(null);
  const firstHighlightRef = useRef<HTMLDivElement>(null);
  const scrolledFor = useRef<string | null>(null);
  const [containerWidth, setContainerWidth] = useState(0);
  const [geometry, setGeometry] = useState<Geometry | null>(null);
  const [rendered, setRendered] = useState(false);
  const [renderError, setRenderError] = useState<unknown>(null);

  const onLoad = useRef(onDocumentLoad);
  onLoad.current = onDocumentLoad;
  useEffect(() => {
    if (document) onLoad.current?.({ numPages: document.numPages });
  }, [document]);

  // The width to fit: the container's content width, whole CSS pixels (a sub-pixel change does not redraw).
  useLayoutEffect(() => {
    const el = outerRef.current;
    if (!el) return;
    const measure = () => setContainerWidth(Math.floor(el.clientWidth));
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, []);

  const pointsWidth = pageSize?.width;
  const pointsHeight = pageSize?.height;
  useEffect(() => {
    const canvas = canvasRef.current;
    if (!document || !canvas || containerWidth <= 0) return;
    let cancelled = false;
    let renderTask: RenderTask | null = null;
    let text: { cancel(): void } | null = null;
    setRendered(false);
    setRenderError(null);
    (async () => {
      if (!Number.isInteger(page) || page < 1 || page > document.numPages) {
        throw new Error(`Page ${page} is not in this document (it has ${document.numPages} page${document.numPages === 1 ? '' : 's'}).`);
      }
      const pdfPage = await document.getPage(page);
      if (cancelled) return;
      const natural = pdfPage.getViewport({ scale: 1 });
      const viewport = pdfPage.getViewport({ scale: containerWidth / natural.width });
      const ratio = window.devicePixelRatio || 1;
      canvas.width = Math.floor(viewport.width * ratio);
      canvas.height = Math.floor(viewport.height * ratio);
      canvas.style.width = `${viewport.width}px`;
      canvas.style.height = `${viewport.height}px`;
      setGeometry({
        width: viewport.width,
        height: viewport.height,
        pointsWidth: pointsWidth ?? natural.width,
        pointsHeight: pointsHeight ?? natural.height,
        pdfScale: viewport.scale,
      });
      renderTask = pdfPage.render({ canvas, viewport, transform: ratio === 1 ? undefined : [ratio, 0, 0, ratio, 0, 0] });
      const textDiv = textRef.current;
      if (textLayer && textDiv) {
        const { TextLayer } = await loadPdfJs();
        if (cancelled) return;
        textDiv.replaceChildren();
        const layer = new TextLayer({ textContentSource: pdfPage.streamTextContent(), container: textDiv, viewport });
        text = layer;
        void layer.render().catch((error: unknown) => {
          if (!cancelled && !isCancel(error)) console.warn('pdf.js text layer:', error);
        });
      }
      await renderTask.promise;
      if (!cancelled) setRendered(true);
    })().catch((error: unknown) => {
      if (!cancelled && !isCancel(error)) setRenderError(error);
    });
    return () => {
      cancelled = true;
      renderTask?.cancel();
      text?.cancel();
    };
  }, [document, page, containerWidth, textLayer, pointsWidth, pointsHeight]);

  const onPage = useMemo(() => boxes.filter((b) => b.page === page), [boxes, page]);
  const boxesKey = `${documentId}|${page}|${onPage.map((b) => `${b.x0},${b.y0},${b.x1},${b.y1}`).join(';')}`;

  // Once per page and set of boxes (not on every resize), bring the quote's first line into view.
  useEffect(() => {
    if (!rendered || scrolledFor.current === boxesKey) return;
    const first = firstHighlightRef.current;
    if (!first) return;
    scrolledFor.current = boxesKey;
    scrollIntoContainer(first);
  }, [rendered, boxesKey]);

  const error = loadError ?? renderError;
  const scale = geometry ? geometry.width / geometry.pointsWidth : 0;
  const scaleY = geometry ? geometry.height / geometry.pointsHeight : 0;
  const name = label ?? `Page ${page}`;

  return (
    <div ref={outerRef} className="kb-evidence-page-frame">
      {error ? <Failed title="The page could not be shown" error={error} onRetry={onRetry} describe={describe} /> : null}
      {!error && !rendered ? (
        <Center py="md" aria-live="polite">
          <Loader size="sm" role="status" aria-label={document ? `Drawing page ${page}` : 'Loading the PDF'} />
        </Center>
      ) : null}
      <div
        className="kb-evidence-page"
        data-testid="pdf-page"
        data-page={page}
        data-scale={geometry ? scale : undefined}
        data-width={geometry?.pointsWidth}
        data-height={geometry?.pointsHeight}
        data-rendered={rendered ? 'true' : 'false'}
        role="group"
        aria-label={name}
        hidden={Boolean(error)}
        style={{
          width: geometry ? `${geometry.width}px` : undefined,
          height: geometry ? `${geometry.height}px` : 0,
          ['--total-scale-factor' as string]: geometry ? geometry.pdfScale : 1,
        }}
      >
        <canvas
          ref={canvasRef}
          className="kb-evidence-canvas"
          aria-hidden={textLayer ? true : undefined}
          role={textLayer ? undefined : 'img'}
          aria-label={textLayer ? undefined : name}
        />
        {geometry
          ? onPage.map((b, i) => (
              <div
                key={`${i}:${b.x0},${b.y0}`}
                ref={i === 0 ? firstHighlightRef : undefined}
                className="kb-evidence-highlight"
                data-testid="highlight"
                data-page={b.page}
                data-x0={b.x0}
                data-y0={b.y0}
                data-x1={b.x1}
                data-y1={b.y1}
                role="img"
                aria-label={`Quoted text, line ${i + 1} of ${onPage.length} on page ${page}`}
                style={{
                  left: `${b.x0 * scale}px`,
                  top: `${b.y0 * scaleY}px`,
                  width: `${Math.max(0, b.x1 - b.x0) * scale}px`,
                  height: `${Math.max(0, b.y1 - b.y0) * scaleY}px`,
                }}
              />
            ))
          : null}
        {textLayer ? <div ref={textRef} className="textLayer" /> : null}
      </div>
    </div>
  );
}
