import { AuditEvents1764700000000, openDatabase, WebhookOutbox1764000000000 } from '@kb/common';
import { DataSource } from 'typeorm';
import { DocumentEntity } from '../documents/document.entity';
import { ProjectEntity } from '../projects/project.entity';
import { InitDocuments1732200000000 } from './migrations/1732200000000-InitDocuments';
import { UploadSlots1732200000001 } from './migrations/1732200000001-UploadSlots';
import { DocumentProgress1732200000005 } from './migrations/1732200000005-DocumentProgress';
import { DocumentVersions1764600000000 } from './migrations/1764600000000-DocumentVersions';
import { DocumentPageSizes1764800000000 } from './migrations/1764800000000-DocumentPageSizes';

/** Migrations of the schema `documents`, oldest first. */
export const DOCUMENTS_MIGRATIONS = [
  InitDocuments1732200000000,
  UploadSlots1732200000001,
  DocumentProgress1732200000005,
  WebhookOutbox1764000000000,
  DocumentVersions1764600000000,
  AuditEvents1764700000000,
  DocumentPageSizes1764800000000,
];

/**
 * Opens the documents service's schema (`documents`: projects, documents, the webhook outbox) with
 * its TypeORM entities and runs its migrations (openDatabase of @kb/common). The service and its
 * medium tests open it the same way.
 * @param url PostgreSQL connection URL (DATABASE_URL).
 * @throws when the database is unreachable or a migration fails.
 */
export function openDocumentsDatabase(url: string): Promise<DataSource> {
  return openDatabase({ url, schema: 'documents', entities: [ProjectEntity, DocumentEntity], migrations: DOCUMENTS_MIGRATIONS });
}
