import { presentDocument } from '@kb/events';
import { AppError, CallContext, ErrorCode, isUuid } from '@kb/common';
import { documentsV1 } from '@kb/proto';
import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { DeleteResultView, DocumentView, DownloadView, ProcessResultView, ReservedDocumentView } from '../common/api-models';
import { ApiEnvelope, ApiErrors } from '../common/openapi';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsInt, IsOptional, IsString, IsUUID, Length, Max, Min } from 'class-validator';
import { DocumentsClient } from '../common/clients';
import { Paginated } from '../common/envelope';
import { Ctx } from '../common/http-context';
import { PaginationQuery } from '../common/pagination.dto';
import { DOCUMENTS_CLIENT } from '../common/tokens';
import { UuidParamPipe } from '../common/validation';

const STATUSES = ['awaiting_upload', 'processing', 'ready', 'completed', 'failed'];

export class ReserveUploadDto {
  @ApiProperty({ minLength: 1, maxLength: 500, example: 'handbook.pdf' })
  @IsString({ message: 'file_name must be a string' })
  @Length(1, 500, { message: 'file_name must be 1 to 500 characters' })
  file_name: string;

  @ApiProperty({ example: 'application/pdf' })
  @IsString({ message: 'content_type must be a string' })
  @Length(1, 255, { message: 'content_type must be 1 to 255 characters' })
  content_type: string;

  @ApiProperty({ minimum: 0, maximum: 524288000, example: 482113 })
  @IsInt({ message: 'size_bytes must be an integer' })
  @Min(0, { message: 'size_bytes must be 0 or more' })
  @Max(524288000, { message: 'size_bytes must be at most 524288000 (500 MB)' })
  size_bytes: number;

  @ApiPropertyOptional({ type: String, format: 'uuid', nullable: true, description: 'omit, or null, for an organization-level document' })
  @IsOptional()
  @IsUUID('all', { message: 'project_id must be a UUID' })
  project_id?: string | null;
}

export class DocumentIdsDto {
  @ApiProperty({ type: [String], format: 'uuid', minItems: 1, maxItems: 100, example: ['9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d'] })
  @IsArray({ message: 'document_ids must be an array of UUIDs' })
  @ArrayMinSize(1, { message: 'document_ids must have at least 1 item' })
  @ArrayMaxSize(100, { message: 'document_ids must have at most 100 items' })
  @IsUUID('all', { each: true, message: 'document_ids must contain only UUIDs' })
  document_ids: string[];
}

export class ListDocumentsQuery extends PaginationQuery {
  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @IsUUID('all', { message: 'project_id must be a UUID' })
  project_id?: string;

  @ApiPropertyOptional({ description: 'comma-separated document UUIDs (1 or more, no empty items)', minLength: 36 })
  @IsOptional()
  @IsString()
  document_ids?: string;

  @ApiPropertyOptional({ enum: STATUSES })
  @IsOptional()
  @IsIn(STATUSES, { message: `status must be one of ${STATUSES.join(', ')}` })
  status?: string;
}

/** Document resource as the API shows it: one presenter, shared with the webhook payloads (@kb/events). */
export { presentDocument };

/** /api/v2/documents: thin translation to DocumentsService over gRPC. */
@ApiTags('Documents')
@ApiBearerAuth()
@Controller('api/v2/documents')
export class DocumentsController {
  constructor(@Inject(DOCUMENTS_CLIENT) private readonly documents: DocumentsClient) {}

  @Post()
  @ApiOperation({ summary: 'Reserve an upload slot (step 1): returns the document and a presigned PUT URL' })
  @ApiEnvelope(ReservedDocumentView, { status: 201 })
  async reserve(@Ctx() ctx: CallContext, @Body() body: ReserveUploadDto) {
    const res = await this.documents.reserveUpload(
      // `project_id: null` is the same as omitting it: an organization-level document (docs/gateway.md).
      { fileName: body.file_name, contentType: body.content_type, sizeBytes: body.size_bytes, projectId: body.project_id ?? undefined },
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
  @ApiOperation({ summary: 'Start processing uploaded documents (step 2)' })
  @ApiEnvelope(ProcessResultView)
  async process(@Ctx() ctx: CallContext, @Body() body: DocumentIdsDto) {
    const res = await this.documents.processDocuments({ documentIds: body.document_ids }, ctx);
    return {
      processed: res.processed,
      skipped: res.skipped.map((s) => ({ document_id: s.documentId, reason: s.reason })),
      failed: res.failed.map((f) => ({ document_id: f.documentId, error: f.error, message: f.message })),
    };
  }

  @Get()
  @ApiOperation({ summary: 'List documents, newest first' })
  @ApiEnvelope(DocumentView, { paginated: true })
  async list(@Ctx() ctx: CallContext, @Query() q: ListDocumentsQuery) {
    const ids = q.document_ids === undefined ? [] : q.document_ids.split(',').map((s) => s.trim());
    // An empty item (`document_ids=,`, a trailing comma, an empty value) is an error: dropping it
    // would turn a filter into "every document".
    if (ids.some((s) => s.length === 0)) throw AppError.validation('document_ids must be comma-separated UUIDs, without empty items.');
    const bad = ids.find((id: string): boolean => !isUuid(id));
    if (bad !== undefined) throw AppError.validation(`document_ids must be comma-separated UUIDs; '${bad.slice(0, 64)}' is not one.`);
    const res = await this.documents.listDocuments(
      { projectId: q.project_id, documentIds: ids, status: q.status, page: { limit: q.limit, offset: q.offset } },
      ctx,
    );
    return new Paginated(res.documents.map(presentDocument), { limit: q.limit, offset: q.offset, total: res.total });
  }

  @Get(':id')
  @ApiOperation({ summary: 'Get a document' })
  @ApiEnvelope(DocumentView)
  async get(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string) {
    return presentDocument(await this.documents.getDocument({ id }, ctx));
  }

  @Get(':id/download')
  @ApiOperation({ summary: 'A short-lived download URL of the stored file' })
  @ApiEnvelope(DownloadView)
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
  @ApiOperation({ summary: 'Delete documents: metadata, stored file and every indexed chunk' })
  @ApiEnvelope(DeleteResultView)
  @ApiErrors(ErrorCode.FORBIDDEN)
  async remove(@Ctx() ctx: CallContext, @Body() body: DocumentIdsDto) {
    return { deleted: (await this.documents.deleteDocuments({ documentIds: body.document_ids }, ctx)).deleted };
  }
}
