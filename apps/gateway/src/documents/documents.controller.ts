import { presentDocument, DOCUMENT_STATUSES, type DocumentStatus, documentStatus } from '@kb/events';
import {
  ACCEPTED_CONTENT_TYPES,
  AppError,
  EXTENSIONS_BY_CONTENT_TYPE,
  type CallContext,
  ErrorCode,
  isUuid,
  FILE_NAME_MAX_CHARS,
  MAX_UPLOAD_BYTES,
  MAX_IDS_PER_REQUEST,
  pickSnakeFields,
} from '@kb/common';
import { documentsV1 } from '@kb/proto';
import { Body, Delete, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { DeleteResultView, DocumentChunkView, DocumentView, DownloadView, PageSizeView, ProcessResultView, ReservedDocumentView } from '../common/api-models';
import { ApiController, ApiEnvelope, ApiErrors, ApiGet } from '../common/openapi';
import { Transform } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsIn, IsInt, IsOptional, IsString, IsUUID, Max, Min } from 'class-validator';
import { type DocumentsClient } from '../common/clients';
import { Ctx } from '../common/http-context';
import { pageOf, pageRequest, PaginationQuery } from '../common/pagination.dto';
import { DOCUMENTS_CLIENT } from '../common/tokens';
import { CharLength, NonBlankText, OptionalUuid, PageNumberParamPipe, UuidParamPipe } from '../common/validation';

/** A UUID as isUuid accepts it (any version, canonical 8-4-4-4-12 hex), for OpenAPI patterns. */
/**
 * A file name the documents service accepts (fileNameProblem): at least one character that is not
 * whitespace, no path separator, no C0/DEL/C1 control character.
 */
export const FILE_NAME_PATTERN = '^[^\\u0000-\\u001f\\u007f-\\u009f/\\\\]*[^\\s\\u0000-\\u001f\\u007f-\\u009f/\\\\][^\\u0000-\\u001f\\u007f-\\u009f/\\\\]*$';
const UUID_PATTERN = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';

/** The presigned upload (step 1½), described on reserveDocument: it is not an API operation of its own. */
const UPLOAD_DESCRIPTION = [
  'Upload the file itself with `PUT <upload.url>` (a presigned URL, valid until `upload.expires_at`), then call processDocuments.',
  '',
  '- **Request:** `PUT` with the file bytes as the body; no `Authorization` header (the URL carries its own signature). Headers: `Content-Type` (send `upload.recommended_content_type`; any type is accepted and the one sent is recorded, `application/octet-stream` when absent) and `Content-Length` (at most the storage limit, 500 MB by default).',
  '- **Where:** with the `local` storage driver the URL is on this gateway, `/storage/v1/objects/<key>?X-Kb-Method=PUT&X-Kb-Expires=…&X-Kb-Content-Type=…&X-Kb-Signature=…`; with the `s3` driver it is an S3/MinIO presigned URL. Use the URL exactly as returned.',
  '- **Responses:** `200` (empty body, `ETag` header) when stored; `403` (`AccessDenied`: expired URL, or the slot is closed because the document is no longer `awaiting_upload`; `SignatureDoesNotMatch`: altered URL); `405` another method; `413` (`EntityTooLarge`) over the size limit. Error bodies of the local driver are `{ "error": { "code", "message" } }`; S3 answers its own XML errors.',
  "- **Browsers:** `OPTIONS` preflights are answered with the origins of `STORAGE_CORS_ORIGINS` (local driver) or the bucket's CORS rules (S3).",
].join('\n');

/**
 * A vendor extension (OpenAPI 3.1 "Specification Extensions") on the reservation's `content_type`:
 * the file extensions of each enum type, from DOCUMENT_FORMATS. The SDK generates its extension map
 * from it (packages/sdk/scripts/generate.mjs). A variable, spread, since ApiPropertyOptions lists no `x-` keys.
 */
const FILE_EXTENSIONS = { 'x-kb-file-extensions': EXTENSIONS_BY_CONTENT_TYPE };

export class ReserveUploadDto {
  @NonBlankText('file_name', FILE_NAME_MAX_CHARS, {
    pattern: FILE_NAME_PATTERN,
    example: 'handbook.pdf',
    description: 'not blank, without path separators (`/`, `\\`) or control characters (checked by the documents service, fileNameProblem)',
  })
  file_name: string;

  @ApiProperty({
    enum: ACCEPTED_CONTENT_TYPES,
    example: 'application/pdf',
    description:
      'an accepted type (canonical spelling shown; any case, parameters such as `; charset=utf-8` and common aliases are accepted too). `x-kb-file-extensions` gives the file extensions of each type, for clients that upload files from disk.',
    ...FILE_EXTENSIONS,
  })
  @IsString({ message: 'content_type must be a string' })
  @CharLength(1, 255, { message: 'content_type must be 1 to 255 characters' })
  content_type: string;

  @ApiProperty({ minimum: 0, maximum: MAX_UPLOAD_BYTES, example: 482113 })
  @IsInt({ message: 'size_bytes must be an integer' })
  @Min(0, { message: 'size_bytes must be 0 or more' })
  @Max(MAX_UPLOAD_BYTES, { message: `size_bytes must be at most ${MAX_UPLOAD_BYTES} (500 MB)` })
  size_bytes: number;

  @OptionalUuid('project_id', {
    type: String,
    nullable: true,
    example: '0b6f3f1e-8a51-4a4e-9f37-2f7d6c1f4a10',
    description: 'omit, or null, for an organization-level document',
  })
  project_id?: string | null;

  @OptionalUuid('replaces', {
    type: String,
    nullable: true,
    example: '9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d',
    description:
      'the document this upload is the next version of (same organization and same `project_id`; both null for organization-level documents). It is superseded when the new version becomes `ready`. 404 when not found there; 409 when it is already superseded or another new version of it is still processing.',
  })
  replaces?: string | null;
}

export class DocumentIdsDto {
  @ApiProperty({ type: [String], format: 'uuid', minItems: 1, maxItems: MAX_IDS_PER_REQUEST, example: ['9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d'] })
  @IsArray({ message: 'document_ids must be an array of UUIDs' })
  @ArrayMinSize(1, { message: 'document_ids must have at least 1 item' })
  @ArrayMaxSize(MAX_IDS_PER_REQUEST, { message: `document_ids must have at most ${MAX_IDS_PER_REQUEST} items` })
  @IsUUID('all', { each: true, message: 'document_ids must contain only UUIDs' })
  document_ids: string[];
}

export class ListDocumentsQuery extends PaginationQuery {
  @OptionalUuid('project_id')
  project_id?: string;

  @ApiPropertyOptional({
    description: 'comma-separated document UUIDs (1 or more, no empty items)',
    pattern: `^\\s*${UUID_PATTERN}\\s*(,\\s*${UUID_PATTERN}\\s*)*$`,
    example: '9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d,4e5f6a7b-8c9d-4e0f-9a1b-2c3d4e5f6a7b',
  })
  @IsOptional()
  @IsString()
  document_ids?: string;

  @ApiPropertyOptional({ enum: [...DOCUMENT_STATUSES] })
  @IsOptional()
  @IsIn([...DOCUMENT_STATUSES], { message: `status must be one of ${DOCUMENT_STATUSES.join(', ')}` })
  status?: DocumentStatus;

  @ApiPropertyOptional({
    type: Boolean,
    description: '`true`: only documents not superseded by a newer version (`superseded_by` null); `false` or omitted: all documents',
  })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value))
  @IsBoolean({ message: 'current must be true or false' })
  current?: boolean;
}

/** Document resource as the API shows it: one presenter, shared with the webhook payloads (@kb/events). */
export { presentDocument };

/** Chunk resource as the API shows it (decisions.md "Chunks"). */
export function presentChunk(c: documentsV1.DocumentChunk) {
  return pickSnakeFields(c, ['nodeId', 'documentId', 'text', 'section', 'startPage', 'endPage', 'orderIndex'], null);
}

/** /api/v2/documents: thin translation to DocumentsService over gRPC. */
@ApiController('Documents', 'api/v2/documents')
export class DocumentsController {
  constructor(@Inject(DOCUMENTS_CLIENT) private readonly documents: DocumentsClient) {}

  @Post()
  @ApiOperation({
    operationId: 'reserveDocument',
    summary: 'Reserve an upload slot (step 1): returns the document and a presigned PUT URL',
    description: UPLOAD_DESCRIPTION,
  })
  @ApiEnvelope(ReservedDocumentView, { status: 201, description: 'The document (`awaiting_upload`) and its upload slot `upload`.' })
  @ApiErrors(ErrorCode.NOT_FOUND, ErrorCode.CONFLICT)
  async reserve(@Ctx() ctx: CallContext, @Body() body: ReserveUploadDto) {
    const res = await this.documents.reserveUpload(
      // `project_id: null` is the same as omitting it: an organization-level document (docs/gateway.md).
      {
        fileName: body.file_name,
        contentType: body.content_type,
        sizeBytes: body.size_bytes,
        projectId: body.project_id ?? undefined,
        replaces: body.replaces ?? undefined,
      },
      ctx,
    );
    const upload = res.upload!;
    return {
      ...presentDocument(res.document!),
      upload: { url: upload.url, method: upload.method, recommended_content_type: upload.recommendedContentType, expires_at: upload.expiresAt },
    };
  }

  @Post('process')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'processDocuments',
    summary: 'Start processing uploaded documents (step 2)',
    description:
      'Documents not awaiting processing, or unknown, are listed in `skipped` with the reason; processing runs in the background (poll getDocument until `completed` or `failed`).',
  })
  @ApiEnvelope(ProcessResultView)
  async process(@Ctx() ctx: CallContext, @Body() body: DocumentIdsDto) {
    const res = await this.documents.processDocuments({ documentIds: body.document_ids }, ctx);
    return {
      processed: res.processed,
      skipped: res.skipped.map((s) => ({ document_id: s.documentId, reason: s.reason })),
      failed: res.failed.map((f) => ({ document_id: f.documentId, error: f.error, message: f.message })),
    };
  }

  @ApiGet('', { operationId: 'listDocuments', summary: 'List documents, newest first' }, DocumentView, { paginated: true })
  async list(@Ctx() ctx: CallContext, @Query() q: ListDocumentsQuery) {
    const ids = q.document_ids === undefined ? [] : q.document_ids.split(',').map((s) => s.trim());
    // An empty item (`document_ids=,`, a trailing comma, an empty value) is an error: dropping it
    // would turn a filter into "every document".
    if (ids.some((s) => s.length === 0)) throw AppError.validation('document_ids must be comma-separated UUIDs, without empty items.');
    const bad = ids.find((id: string): boolean => !isUuid(id));
    if (bad !== undefined) throw AppError.validation(`document_ids must be comma-separated UUIDs; '${bad.slice(0, 64)}' is not one.`);
    const res = await this.documents.listDocuments(
      {
        projectId: q.project_id,
        documentIds: ids,
        status: q.status === undefined ? undefined : documentStatus.toProto(q.status),
        current: q.current === true,
        page: pageRequest(q),
      },
      ctx,
    );
    return pageOf(q, res.documents.map(presentDocument), res.total);
  }

  @ApiGet(':id', { operationId: 'getDocument', summary: 'Get a document' }, DocumentView)
  async get(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string) {
    return presentDocument(await this.documents.getDocument({ id }, ctx));
  }

  @ApiGet(
    ':id/chunks',
    {
      summary: "List a document's chunks in document order",
      description:
        "The passages a source's `node_id` (or a citation's `chunk_id`) points at. 404 while the document has no chunks yet (not `ready` or `completed`).",
      operationId: 'listDocumentChunks',
    },
    DocumentChunkView,
    { paginated: true },
  )
  @ApiErrors(ErrorCode.NOT_FOUND)
  async chunks(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string, @Query() q: PaginationQuery) {
    const res = await this.documents.listChunks({ documentId: id, page: pageRequest(q) }, ctx);
    return pageOf(q, res.chunks.map(presentChunk), res.total);
  }

  @ApiGet(
    ':id/chunks/:node_id',
    {
      summary: 'Get one chunk of a document (the passage behind a source or citation)',
      operationId: 'getDocumentChunk',
    },
    DocumentChunkView,
  )
  @ApiErrors(ErrorCode.NOT_FOUND)
  async chunk(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string, @Param('node_id', UuidParamPipe) nodeId: string) {
    return presentChunk(await this.documents.getChunk({ documentId: id, nodeId }, ctx));
  }

  @ApiGet(
    ':id/pages/:n',
    {
      summary: 'The size of one page of a document, to draw the boxes of sources and citations',
      description:
        "Width and height of page `n` (1-based) in PDF points, the space of the `boxes` of sources and citations (origin at the page's top-left). " +
        "404 for another organization's or an unknown document, one not processed yet, a format without pages (anything but PDF: its quotes have `boxes: []`), " +
        'a PDF processed before page sizes were recorded, or `n` past the last page.',
      operationId: 'getDocumentPage',
    },
    PageSizeView,
  )
  @ApiErrors(ErrorCode.NOT_FOUND)
  async page(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string, @Param('n', PageNumberParamPipe) n: string) {
    const p = await this.documents.getPage({ documentId: id, page: Number(n) }, ctx);
    return { page: p.page, width: p.width, height: p.height };
  }

  @ApiGet(':id/download', { operationId: 'getDocumentDownload', summary: 'A short-lived download URL of the stored file' }, DownloadView)
  async download(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string) {
    const d = await this.documents.getDownload({ id }, ctx);
    return {
      document_id: d.documentId,
      file_name: d.fileName,
      content_type: d.contentType,
      size_bytes: d.sizeBytes ?? null,
      download_url: d.downloadUrl,
      expires_at: d.expiresAt,
    };
  }

  @Delete()
  @HttpCode(200)
  @ApiOperation({ operationId: 'deleteDocuments', summary: 'Delete documents: metadata, stored file and every indexed chunk' })
  @ApiEnvelope(DeleteResultView)
  @ApiErrors(ErrorCode.FORBIDDEN)
  async remove(@Ctx() ctx: CallContext, @Body() body: DocumentIdsDto) {
    return { deleted: (await this.documents.deleteDocuments({ documentIds: body.document_ids }, ctx)).deleted };
  }
}
