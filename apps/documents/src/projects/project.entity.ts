import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A project of one organization (table `documents.projects`). */
@Entity({ name: 'projects' })
export class ProjectEntity {
  @PrimaryColumn({ type: 'uuid' }) id: string;
  @Column({ name: 'org_id', type: 'text' }) orgId: string;
  @Column({ type: 'varchar', length: 200 }) name: string;
  @Column({ type: 'text', nullable: true }) description: string | null;
  @Column({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @Column({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}
