/**
 * The evidence behind a verdict or an answer (issue 31): for a PDF, the cited page drawn with pdf.js
 * and the quote's lines highlighted from its `boxes`; for other formats, the chunk's text with the
 * quote marked from its `location` (decisions.md "Where a quote stands (for highlighting)").
 *
 * What it asks the API, through react-query (the app provides the QueryClientProvider):
 * - PDF with boxes: GET /api/v2/documents/{id}/download (the presigned address of the file, fetched
 *   by pdf.js without a bearer header) and GET /api/v2/documents/{id}/pages/{n} (the page size in
 *   points, the space of the boxes);
 * - no boxes: GET /api/v2/documents/{id} for its content type; a PDF then shows the chunk's first
 *   page without highlights above the passage text, anything else the passage text alone;
 * - the passage text: GET /api/v2/documents/{id}/chunks/{chunk_id}.
 */
import { Alert, Center, Group, Loader, Paper, SegmentedControl, Stack, Text, Title, type TitleOrder } from '@mantine/core';
import { useQuery, type UseQueryResult } from '@tanstack/react-query';
import { useId, useState, type ReactNode } from 'react';
import { KbApiError, getChunk, getPage, type KbClient } from '@kb-platform/sdk/browser';
import { ChunkTextView } from './ChunkTextView';
import { Failed } from './failed';
import { PdfPageView } from './PdfPageView';
import { isPdfContentType, pagesOf, type EvidenceSource } from './source';

/** Props of {@link EvidenceViewer}. */
export interface EvidenceViewerProps {
  /** The signed-in client. */
  kb: KbClient;
  /** What to show (see fromCheckSource and fromCitation). */
  source: EvidenceSource;
  /** Heading level of the file name (default 3). */
  titleOrder?: TitleOrder;
  /** Whether the PDF page carries pdf.js's selectable text layer (default true). */
  textLayer?: boolean;
}

/**
 * A presigned address is asked for again after this long (ms) on a new viewer; it is valid about
 * 10 minutes (service-api.md "Download URL lifetime"), and an address with less than
 * {@link URL_MARGIN_MS} left is not handed to pdf.js.
 */
const DOWNLOAD_STALE_MS = 4 * 60_000;
const URL_MARGIN_MS = 60_000;

/** react-query keys of what the viewer loads, namespaced so they do not meet the screens' own. */
export const evidenceKeys = {
  document: (documentId: string) => ['evidence', 'document', documentId] as const,
  download: (documentId: string) => ['evidence', 'download', documentId] as const,
  page: (documentId: string, page: number) => ['evidence', 'page', documentId, page] as const,
  chunk: (documentId: string, chunkId: string) => ['evidence', 'chunk', documentId, chunkId] as const,
};

function Pending({ label }: { label: string }) {
  return (
    <Center py="md">
      <Loader size="sm" role="status" aria-label={label} />
    </Center>
  );
}

/** What a query holds, or its Loader, or its Alert. */
function Loaded<T>({ query, pending, failed, children }: { query: UseQueryResult<T>; pending: string; failed: string; children: (data: T) => ReactNode }) {
  if (query.isPending) return <Pending label={pending} />;
  if (query.isError) return <Failed title={failed} error={query.error} onRetry={() => void query.refetch()} />;
  return <>{children(query.data)}</>;
}

function usePassage(kb: KbClient, source: EvidenceSource, enabled = true) {
  return useQuery({
    queryKey: evidenceKeys.chunk(source.documentId, source.chunkId),
    queryFn: ({ signal }) => getChunk(kb, source.documentId, source.chunkId, { signal }),
    enabled,
    staleTime: 5 * 60_000,
  });
}

/** The chunk's text with the quote marked. */
function PassageText({ kb, source }: { kb: KbClient; source: EvidenceSource }) {
  const chunk = usePassage(kb, source);
  return (
    <Loaded query={chunk} pending="Loading the passage" failed="The passage could not be loaded">
      {(c) => (
        <Stack gap="xs">
          {c.section ? (
            <Text size="sm" c="gray.7">
              {c.section}
            </Text>
          ) : null}
          <ChunkTextView text={c.text} location={source.location} />
        </Stack>
      )}
    </Loaded>
  );
}

/** A page of the PDF with the quote's boxes on it; `pages` lists the quote's pages (a switcher when several). */
function PdfEvidence({
  kb,
  source,
  pages,
  initialPage,
  textLayer,
  header,
}: {
  kb: KbClient;
  source: EvidenceSource;
  pages: number[];
  initialPage: number;
  textLayer: boolean;
  header: (pageLine: ReactNode, controls: ReactNode) => ReactNode;
}) {
  const { documentId } = source;
  const [page, setPage] = useState(initialPage);
  const [numPages, setNumPages] = useState<number | null>(null);
  const [attempt, setAttempt] = useState(0);
  const download = useQuery({
    queryKey: evidenceKeys.download(documentId),
    queryFn: ({ signal }) => kb.data(kb.api.GET('/api/v2/documents/{id}/download', { params: { path: { id: documentId } }, signal })),
    staleTime: DOWNLOAD_STALE_MS,
  });
  const size = useQuery({
    queryKey: evidenceKeys.page(documentId, page),
    queryFn: ({ signal }) => getPage(kb, documentId, page, { signal }),
    staleTime: Infinity,
    retry: (count, error) => !(error instanceof KbApiError && error.status < 500) && count < 2,
  });
  const expires = download.data ? Date.parse(download.data.expires_at) : NaN;
  const url = download.data && !(expires - Date.now() < URL_MARGIN_MS) ? download.data.download_url : null;

  const switcher =
    pages.length > 1 ? (
      <SegmentedControl
        aria-label="Page of the quote"
        size="xs"
        value={String(page)}
        onChange={(v) => setPage(Number(v))}
        data={pages.map((p) => ({ value: String(p), label: `p. ${p}` }))}
      />
    ) : null;

  let body: ReactNode;
  if (download.isError) body = <Failed title="The PDF could not be downloaded" error={download.error} onRetry={() => void download.refetch()} />;
  else if (!url || size.isPending) body = <Pending label="Loading the PDF" />;
  else
    body = (
      <PdfPageView
        key={attempt}
        documentId={documentId}
        url={url}
        page={page}
        boxes={source.boxes}
        pageSize={size.data ?? null}
        textLayer={textLayer}
        label={`Page ${page} of ${source.fileName}`}
        onDocumentLoad={({ numPages: n }) => setNumPages(n)}
        onRetry={() => {
          void download.refetch().then(() => setAttempt((a) => a + 1));
        }}
      />
    );
  return (
    <>
      {header(
        <>
          Page {page} of {numPages ?? '…'}
        </>,
        switcher,
      )}
      {body}
    </>
  );
}

/**
 * Shows where a source's quote stands: the cited PDF page with the quote's lines highlighted (the
 * page of the first box, with a switcher when the boxes span pages), or the passage text with the
 * quote marked for formats without pages. A region named after the file; Loader while loading, Alert
 * with "Try again" on failure.
 */
export function EvidenceViewer({ kb, source, titleOrder = 3, textLayer = true }: EvidenceViewerProps) {
  const headingId = useId();
  const pages = pagesOf(source.boxes);
  const hasBoxes = pages.length > 0;
  const document = useQuery({
    queryKey: evidenceKeys.document(source.documentId),
    queryFn: ({ signal }) => kb.data(kb.api.GET('/api/v2/documents/{id}', { params: { path: { id: source.documentId } }, signal })),
    enabled: !hasBoxes,
    staleTime: 60_000,
  });
  const sourceKey = `${source.documentId}|${source.chunkId}|${pages.join(',')}`;

  const header = (pageLine: ReactNode, controls: ReactNode) => (
    <Group justify="space-between" align="flex-start" wrap="wrap" gap="xs">
      <div>
        <Title order={titleOrder} size="h5" id={headingId}>
          {source.fileName}
        </Title>
        {pageLine ? (
          <Text size="sm" c="gray.7" data-testid="evidence-page-line">
            {pageLine}
          </Text>
        ) : null}
      </div>
      {controls}
    </Group>
  );
  const chunkPages = source.startPage
    ? source.endPage && source.endPage !== source.startPage
      ? `Pages ${source.startPage}–${source.endPage}`
      : `Page ${source.startPage}`
    : null;

  let content: ReactNode;
  if (hasBoxes) {
    content = <PdfEvidence key={sourceKey} kb={kb} source={source} pages={pages} initialPage={pages[0]} textLayer={textLayer} header={header} />;
  } else if (document.isPending) {
    content = (
      <>
        {header(chunkPages, null)}
        <Pending label="Loading the document" />
      </>
    );
  } else if (document.isError) {
    content = (
      <>
        {header(chunkPages, null)}
        <Failed title="The document could not be loaded" error={document.error} onRetry={() => void document.refetch()} />
      </>
    );
  } else if (isPdfContentType(document.data.content_type)) {
    const page = source.startPage ?? 1;
    content = (
      <>
        <PdfEvidence key={sourceKey} kb={kb} source={source} pages={[page]} initialPage={page} textLayer={textLayer} header={header} />
        <Alert color="yellow" title="The quote is not placed on the page">
          Its lines were not located in this PDF (a document processed before quote locations were recorded); the quote is marked in the passage text below.
        </Alert>
        <PassageText kb={kb} source={source} />
      </>
    );
  } else {
    content = (
      <>
        {header(chunkPages, null)}
        <PassageText kb={kb} source={source} />
      </>
    );
  }

  return (
    <Paper component="section" aria-labelledby={headingId} withBorder p="sm" data-testid="evidence-viewer">
      <Stack gap="sm">{content}</Stack>
    </Paper>
  );
}
