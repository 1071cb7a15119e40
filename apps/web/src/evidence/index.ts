// The evidence viewer of the review workspace (issue 31): where a verdict's source or an answer's
// citation stands, shown on its PDF page or in its passage text.
export { EvidenceViewer, evidenceKeys, type EvidenceViewerProps } from './EvidenceViewer';
export { EvidencePane } from './EvidencePane';
export { PdfPageView, type PdfPageViewProps } from './PdfPageView';
export { ChunkTextView, type ChunkTextViewProps } from './ChunkTextView';
export { fromCheckSource, fromCitation, pagesOf, isPdfContentType, locationFits, type EvidenceSource, type CheckSource, type Citation } from './source';
export { acquirePdf, usePdfDocument, loadPdfJs, RELEASE_DELAY_MS, type PdfDocumentState } from './pdf-documents';
