import path from 'node:path';
import { MultiBar, Presets, type SingleBar } from 'cli-progress';
import { filesOf, uploadFiles, type KbClient, type UploadProgress } from '@kb-platform/sdk';
import { clip, printJson, table } from './output';
import { UsageError } from './exit-codes';

/** Options of `kb upload`. */
export interface UploadCommandOptions {
  project?: string;
  /** The document the (single) file is the next version of. */
  replaces?: string;
  wait: boolean;
  concurrency: string;
  recursive: boolean;
  json?: boolean;
}

/** Share of a file's bar for each step: bytes sent fill the first half, processing the rest. */
function barValue(p: UploadProgress): number {
  if (p.stage === 'done' || p.stage === 'failed') return 100;
  if (p.stage === 'reserving') return 0;
  if (p.stage === 'uploading') return p.bytesTotal ? Math.round((50 * p.bytesSent) / p.bytesTotal) : 50;
  const progress = (p.document as { progress?: { pages_done?: number | null; pages_total?: number | null } | null } | undefined)?.progress;
  if (p.document?.status === 'ready') return 90;
  if (progress?.pages_total) return 50 + Math.round((35 * (progress.pages_done ?? 0)) / progress.pages_total);
  return 55;
}

function stageLabel(p: UploadProgress): string {
  if (p.stage === 'failed') return 'failed';
  if (p.stage === 'done') return p.document?.status ?? 'done';
  if (p.stage === 'processing') {
    const progress = (p.document as { progress?: { stage?: string } | null } | undefined)?.progress;
    return progress?.stage ?? p.document?.status ?? 'processing';
  }
  return p.stage;
}

const size = (bytes: number) => (bytes >= 1 << 20 ? `${(bytes / (1 << 20)).toFixed(1)} MB` : `${Math.max(1, Math.round(bytes / 1024))} KB`);

/**
 * `kb upload <files or folders…>`: uploads every accepted file (folders walked), one progress bar
 * per file on a terminal (a line per finished file otherwise), then a summary table. Exit 1 when a
 * file failed.
 */
export async function uploadCommand(kb: KbClient, paths: string[], options: UploadCommandOptions): Promise<void> {
  const { files, skipped } = await filesOf(paths, options.recursive);
  if (options.replaces !== undefined && files.length !== 1) throw new UsageError(`--replaces takes exactly one file (${files.length} found).`);
  const tty = !options.json && process.stderr.isTTY;
  const nameWidth = Math.min(40, Math.max(8, ...files.map((f) => path.basename(f).length)));
  const bars = tty
    ? new MultiBar(
        {
          format: `{file} |{bar}| {percentage}% | {stage}`,
          hideCursor: true,
          clearOnComplete: false,
          stopOnComplete: false,
          stream: process.stderr,
          barsize: 24,
          autopadding: true,
        },
        Presets.shades_classic,
      )
    : null;
  const byFile = new Map<string, SingleBar>();
  const finished = new Set<string>();
  const onProgress = (p: UploadProgress) => {
    if (bars) {
      const bar = byFile.get(p.file);
      const payload = { file: clip(path.basename(p.file), nameWidth).padEnd(nameWidth), stage: stageLabel(p).padEnd(15) };
      if (!bar) byFile.set(p.file, bars.create(100, barValue(p), payload));
      else bar.update(barValue(p), payload);
    } else if (!options.json && (p.stage === 'done' || p.stage === 'failed') && !finished.has(p.file)) {
      finished.add(p.file);
      process.stderr.write(`${p.stage === 'failed' ? '✘' : '✔'} ${path.basename(p.file)}: ${p.stage === 'failed' ? `failed: ${p.error}` : stageLabel(p)}\n`);
    }
  };
  let summary;
  try {
    summary = await uploadFiles(kb, files, {
      projectId: options.project,
      replaces: options.replaces,
      wait: options.wait,
      concurrency: Number(options.concurrency) || 3,
      onProgress,
    });
  } finally {
    bars?.stop();
  }
  summary.skipped.push(...skipped);
  if (options.json) {
    printJson({
      documents: summary.documents.map((d) => ({ file: d.file, ...d.document })),
      failed: summary.failed.map((f) => ({ file: f.file, error: f.error, document_id: f.document?.id ?? null })),
      skipped: summary.skipped,
    });
  } else {
    const t = table(['file', 'size', 'status', 'chunks', 'document id'], ['flex', 10, 11, 8, 38]);
    for (const d of summary.documents)
      t.push([path.basename(d.file), size(d.document.size_bytes ?? 0), d.document.status, String(d.document.chunk_count ?? ''), d.document.id]);
    for (const f of summary.failed) t.push([path.basename(f.file), '', 'failed', '', f.document?.id ?? '']);
    if (summary.documents.length + summary.failed.length > 0) process.stdout.write(`${t.toString()}\n`);
    for (const f of summary.failed) process.stdout.write(`✘ ${path.basename(f.file)}: ${f.error}\n`);
    for (const s of summary.skipped) process.stdout.write(`– skipped ${path.relative(process.cwd(), s.file) || s.file}: ${s.reason}\n`);
    const byStatus = new Map<string, number>();
    for (const d of summary.documents) byStatus.set(d.document.status, (byStatus.get(d.document.status) ?? 0) + 1);
    const parts = [...byStatus].map(([status, n]) => `${n} ${status}`);
    if (summary.failed.length) parts.push(`${summary.failed.length} failed`);
    if (summary.skipped.length) parts.push(`${summary.skipped.length} skipped`);
    const chunks = summary.documents.reduce((n, d) => n + (d.document.chunk_count ?? 0), 0);
    const version = options.replaces && summary.documents[0] ? ` (version ${summary.documents[0].document.version}, replaces ${options.replaces})` : '';
    process.stdout.write(
      `${files.length} file(s)${options.project ? ` into project ${options.project}` : ''}${version}: ${parts.join(', ') || 'nothing to upload'}${chunks ? `; ${chunks} chunks indexed` : ''}\n`,
    );
  }
  if (summary.failed.length > 0) process.exitCode = 1;
}
