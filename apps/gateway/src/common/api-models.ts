import { DOCUMENT_STATUSES, SKIP_REASONS } from '@kb/events';
import { PROJECT_NAME_MAX_CHARS } from '@kb/common';
import { ApiProperty, ApiPropertyOptional, type ApiPropertyOptions } from '@nestjs/swagger';

/**
 * Response models of the gateway's own controllers, for the OpenAPI reference only (handlers
 * return plain objects of these shapes; service-api.md §2 is the source of each field).
 */
export class OrganizationView {
  @ApiProperty({ example: '5a8c2d4e-1f3b-4c6d-9e8f-0a1b2c3d4e5f' }) id: string;
  @ApiProperty({ example: 'Acme Construction' }) name: string;
}

export class ProjectView {
  @ApiProperty({ format: 'uuid', example: '0b6f3f1e-8a51-4a4e-9f37-2f7d6c1f4a10' }) id: string;
  @ApiProperty({ example: '5a8c2d4e-1f3b-4c6d-9e8f-0a1b2c3d4e5f' }) org_id: string;
  @ApiProperty({ minLength: 1, maxLength: PROJECT_NAME_MAX_CHARS, example: 'Site safety 2026' }) name: string;
  @ApiProperty({ type: String, nullable: true, example: 'Handbooks for the new site' }) description: string | null;
  @ApiProperty({ type: 'integer', minimum: 0, example: 3, description: 'documents in the project, any status' }) document_count: number;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T04:00:00.000Z' }) created_at: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T04:00:00.000Z' }) updated_at: string;
}

const PROGRESS_STAGES = ['extracting', 'ocr', 'chunking', 'indexing', 'embedding'];

export class DocumentProgressView {
  @ApiProperty({ enum: PROGRESS_STAGES, example: 'ocr' }) stage: string;
  @ApiProperty({
    type: 'integer',
    nullable: true,
    example: 3,
    description: 'pages done in this stage (OCR: pages OCRed so far); null where the stage does not work by page',
  })
  pages_done: number | null;
  @ApiProperty({ type: 'integer', nullable: true, example: 12, description: 'pages this stage works on (OCR: the pages to OCR); null where not counted' })
  pages_total: number | null;
}

export class DocumentView {
  @ApiProperty({ format: 'uuid', example: '9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d' }) id: string;
  @ApiProperty({ example: '5a8c2d4e-1f3b-4c6d-9e8f-0a1b2c3d4e5f' }) org_id: string;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, example: '0b6f3f1e-8a51-4a4e-9f37-2f7d6c1f4a10' }) project_id: string | null;
  @ApiProperty({ example: 'handbook.pdf' }) file_name: string;
  @ApiProperty({ example: 'application/pdf' }) content_type: string;
  @ApiProperty({ type: 'integer', nullable: true, example: 482113, description: 'bytes' }) size_bytes: number | null;
  @ApiProperty({ enum: [...DOCUMENT_STATUSES], example: 'completed' }) status: string;
  @ApiProperty({ type: 'integer', nullable: true, example: 42 }) chunk_count: number | null;
  @ApiProperty({ type: String, nullable: true, example: null }) error_message: string | null;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T04:00:00.000Z' }) created_at: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T04:01:10.000Z' }) updated_at: string;
  @ApiProperty({
    type: DocumentProgressView,
    nullable: true,
    description: 'where processing is, updated at least every 5 s of work; null outside `processing` and `ready`',
  })
  progress: DocumentProgressView | null;
  @ApiProperty({
    type: 'integer',
    example: 2,
    minimum: 1,
    description: "version in its chain of revisions: 1 for a first upload, the replaced document's version + 1 for an upload with `replaces`",
  })
  version: number;
  @ApiProperty({
    type: String,
    format: 'uuid',
    nullable: true,
    example: '4e5f6a7b-8c9d-4e0f-9a1b-2c3d4e5f6a7b',
    description: 'the previous version, null for a first upload',
  })
  replaces: string | null;
  @ApiProperty({
    type: String,
    format: 'uuid',
    nullable: true,
    example: null,
    description:
      'the next version, set when it became ready: the document is then out of the knowledge scope (still listed, downloadable, its chunks readable)',
  })
  superseded_by: string | null;
}

/** A quote's offsets in its chunk's `text` (decisions.md "Where a quote stands (for highlighting)"). */
export class QuoteLocationView {
  @ApiProperty({ type: 'integer', minimum: 0, example: 120, description: "offset (UTF-16 code units) of the quote's first character in the chunk's `text`" })
  char_start: number;
  @ApiProperty({ type: 'integer', minimum: 0, example: 164, description: 'offset just after the quote: `text.slice(char_start, char_end)` is the quote' })
  char_end: number;
}

/** One line of a quote on its PDF page, in PDF points with the origin at the page's top-left. */
export class QuoteBoxView {
  @ApiProperty({ type: 'integer', minimum: 1, example: 4, description: '1-based page' }) page: number;
  @ApiProperty({ example: 72.02, description: "left edge, points from the page's left" }) x0: number;
  @ApiProperty({ example: 141.5, description: "top edge, points from the page's top" }) y0: number;
  @ApiProperty({ example: 410.33, description: 'right edge' }) x1: number;
  @ApiProperty({ example: 153.48, description: 'bottom edge' }) y1: number;
}

/** The `location` and `boxes` fields every source and citation carries. */
export const QUOTE_LOCATION_PROPERTY: ApiPropertyOptions = {
  type: QuoteLocationView,
  nullable: true,
  description:
    "where the quote stands in the chunk's `text` (GET /api/v2/documents/{id}/chunks/{node_id}); null for results stored before locations were recorded",
};
export const QUOTE_BOXES_PROPERTY: ApiPropertyOptions = {
  type: [QuoteBoxView],
  description:
    'one box per line of the quote on its PDF page(s), PDF points, origin top-left (page sizes: GET /api/v2/documents/{id}/pages/{n}); [] for formats without pages and documents processed before boxes were stored',
};

/** Any class, as a view mixin such as {@link WithQuotePlace} extends it (the TypeScript mixin constructor shape). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- TypeScript requires exactly `any[]` in a mixin's base constructor (TS2545)
export type ViewClass = new (...args: any[]) => object;

/**
 * Mixin: `Base`'s properties, then `section`, `location` and `boxes`, the fields every source and
 * citation ends with. The OpenAPI schema lists inherited properties first, in declaration order,
 * so `class XView extends WithQuotePlace(XFields, '…') {}` documents the same properties in the
 * same order as one class declaring them all.
 * @param sectionDescription the `section` property's description (which chunk the heading path is of)
 */
export function WithQuotePlace<T extends ViewClass>(Base: T, sectionDescription: string) {
  class QuotePlaced extends Base {
    @ApiProperty({ type: String, nullable: true, example: 'Part 2 > Scope', description: sectionDescription }) section: string | null;
    @ApiProperty(QUOTE_LOCATION_PROPERTY) location: QuoteLocationView | null;
    @ApiProperty(QUOTE_BOXES_PROPERTY) boxes: QuoteBoxView[];
  }
  return QuotePlaced;
}

/** The size of one page of a document (decisions.md "Where a quote stands"). */
export class PageSizeView {
  @ApiProperty({ type: 'integer', minimum: 1, example: 4 }) page: number;
  @ApiProperty({ example: 612, description: 'width in PDF points (1/72 inch)' }) width: number;
  @ApiProperty({ example: 792, description: 'height in PDF points' }) height: number;
}

export class DocumentChunkView {
  @ApiProperty({ format: 'uuid', example: '3f1c9a52-7d0e-5b41-9c2a-6e8d4b7f0a13', description: "the chunk id: a source's `node_id`, a citation's `chunk_id`" })
  node_id: string;
  @ApiProperty({ format: 'uuid', example: '9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d' }) document_id: string;
  @ApiProperty({ example: 'Hard hats are required at all times on site.' }) text: string;
  @ApiProperty({
    type: String,
    nullable: true,
    example: 'Part 2 > Scope',
    description: 'heading path (outermost first, joined by " > "), null when the chunk is under no heading',
  })
  section: string | null;
  @ApiProperty({ type: 'integer', nullable: true, example: 4, description: '1-based; null where the format has no pages' }) start_page: number | null;
  @ApiProperty({ type: 'integer', nullable: true, example: 4 }) end_page: number | null;
  @ApiProperty({ type: 'integer', minimum: 0, example: 0, description: '0-based position of the chunk in the document' }) order_index: number;
}

export class UploadSlotView {
  @ApiProperty({
    format: 'uri',
    example:
      'https://kb.example.com/storage/v1/objects/5a8c2d4e-1f3b-4c6d-9e8f-0a1b2c3d4e5f/9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d/handbook.pdf?X-Kb-Method=PUT&X-Kb-Expires=1764547260&X-Kb-Content-Type=application%2Fpdf&X-Kb-Signature=4f1c9a2e7b3d5f60a8c1e2d3b4a5968778695a4b3c2d1e0f9a8b7c6d5e4f3a2b',
    description: 'presigned PUT URL of the file (see reserveDocument); no Authorization header',
  })
  url: string;
  @ApiProperty({ enum: ['PUT'], example: 'PUT' }) method: string;
  @ApiProperty({ example: 'application/pdf' }) recommended_content_type: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T06:00:00.000Z' }) expires_at: string;
}

export class ReservedDocumentView extends DocumentView {
  @ApiProperty({ type: UploadSlotView }) upload: UploadSlotView;
}

const SKIP_REASONS_DESCRIPTION =
  "`not_found`: no such document in the organization; `not_awaiting_upload`: its processing already started; `upload_not_found`: no file was PUT to its upload URL; `size_mismatch`: the stored file's size differs from the declared `size_bytes`; `content_type_mismatch`: the file was PUT with another content type than the declared one";

export class SkippedDocumentView {
  @ApiProperty({ format: 'uuid' }) document_id: string;
  @ApiProperty({ enum: SKIP_REASONS, example: 'not_found', description: SKIP_REASONS_DESCRIPTION }) reason: string;
}

export class FailedDocumentView {
  @ApiProperty({ format: 'uuid' }) document_id: string;
  @ApiProperty({ example: 'INTERNAL_ERROR' }) error: string;
  @ApiProperty({ example: 'The file could not be queued for processing.' }) message: string;
}

export class ProcessResultView {
  @ApiProperty({ type: [String], example: ['9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d'] }) processed: string[];
  @ApiProperty({ type: [SkippedDocumentView] }) skipped: SkippedDocumentView[];
  @ApiProperty({ type: [FailedDocumentView] }) failed: FailedDocumentView[];
}

export class DeleteResultView {
  @ApiProperty({ type: [String], example: ['9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d'] }) deleted: string[];
}

export class DownloadView {
  @ApiProperty({ format: 'uuid' }) document_id: string;
  @ApiProperty({ example: 'handbook.pdf' }) file_name: string;
  @ApiProperty({ example: 'application/pdf' }) content_type: string;
  @ApiProperty({ type: 'integer', nullable: true, example: 482113, description: 'bytes' }) size_bytes: number | null;
  @ApiProperty({
    format: 'uri',
    example:
      'https://kb.example.com/storage/v1/objects/5a8c2d4e-1f3b-4c6d-9e8f-0a1b2c3d4e5f/9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d/handbook.pdf?X-Kb-Method=GET&X-Kb-Expires=1764547860&X-Kb-Content-Type=application%2Fpdf&X-Kb-File-Name=handbook.pdf&X-Kb-Signature=b2a3f4e5d6c7b8a9f0e1d2c3b4a5968778695a4b3d2e1c8a06f5d3b7e2a9c1f4',
    description: 'presigned GET URL of the stored file; no Authorization header',
  })
  download_url: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T04:10:00.000Z' }) expires_at: string;
}

export class HealthView {
  @ApiProperty({ example: 'ok' }) status: string;
}

export class ReadinessView {
  @ApiProperty({ enum: ['ready'], example: 'ready' }) status: string;
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string', enum: ['ok', 'unavailable'] },
    example: { database: 'ok', nats: 'ok', documents: 'ok', ingestion: 'ok', retrieval: 'ok', check: 'ok', agent: 'ok' },
  })
  checks: Record<string, 'ok' | 'unavailable'>;
}
