import { once } from 'node:events';
import { PassThrough, Writable } from 'node:stream';
import { evidenceOf, requirementStatus, runStatus, subRequirementStatus } from '@kb/events';
import { checkV1 } from '@kb/proto';
import { stringify } from 'csv-stringify';
import ExcelJS from 'exceljs';
import PDFDocument from 'pdfkit';
import { sourceLabel as pageLabel } from '../common/source-label';

/**
 * Reports of a check run an auditor can keep (decisions.md "Reports", docs/check.md "Reports"):
 * one row or entry per requirement in `order_index` order, generated in the gateway from pages of
 * requirements read over gRPC and streamed to the response as they are written, so a 1,000-requirement
 * run never sits in memory as a whole file.
 */

/** The formats of `GET /api/v2/check/runs/{id}/report?format=`; the first is the default. */
export const REPORT_FORMATS = ['xlsx', 'csv', 'pdf'] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];

/** `Content-Type` of each format (CSV is UTF-8 text). */
export const REPORT_CONTENT_TYPES: Record<ReportFormat, string> = {
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  csv: 'text/csv; charset=utf-8',
  pdf: 'application/pdf',
};

/** Column names, in order: the CSV header and the XLSX requirements sheet's header. */
export const REPORT_COLUMNS = [
  'index',
  'requirement',
  'ref',
  'machine_result',
  'score',
  'review_decision',
  'reviewer',
  'comment',
  'evidence',
  'sources',
] as const;

/** Characters a spreadsheet cell holds (Excel's limit); longer cells end with "…". */
export const XLSX_CELL_MAX_CHARS = 32_767;

/** One requirement as a report row. */
export interface ReportRow {
  /** The requirement's `order_index` (0-based, as the API shows it). */
  index: number;
  requirement: string;
  /** `metadata.ref` when present (a string or number; other values as JSON), else ''. */
  ref: string;
  /** `pass` when every sub-requirement complies, `fail` otherwise, `pending` until completed. */
  machine_result: 'pass' | 'fail' | 'pending';
  /** Lowest sub-requirement score (0–1) of a completed requirement; null otherwise. */
  score: number | null;
  /** `pass` | `fail`, with ` (outdated)` when the requirement was checked again after the review; '' when not reviewed. */
  review_decision: string;
  reviewer: string;
  comment: string;
  /** The verbatim evidence quoted by each sub-requirement, one per line ('' when none). */
  evidence: string;
  /** Distinct sources as `file_name p.X-Y` (`file_name` alone without pages), joined by `; `. */
  sources: string;
}

/** The run-level facts that open the XLSX and PDF reports. */
export interface ReportSummary {
  project: string;
  runName: string;
  runId: string;
  status: string;
  createdAt: string;
  processingStartedAt: string | null;
  processingCompletedAt: string | null;
  generatedAt: string;
  total: number;
  processed: number;
  /** The machine's counters. */
  machinePassed: number;
  machineFailed: number;
  /** `review_summary`: counts with current reviews applied. */
  reviewed: number;
  reviewPassed: number;
  reviewFailed: number;
}

/** A source as the report cell shows it: `file_name p.X-Y` (`title` is the document's file name). */
export function sourceLabel(s: checkV1.Source): string {
  return pageLabel(s.title, s.startPage, s.endPage);
}

function refOf(metadataJson: string): string {
  if (!metadataJson) return '';
  const ref = (JSON.parse(metadataJson) as Record<string, unknown>).ref;
  if (ref === undefined || ref === null) return '';
  return typeof ref === 'string' || typeof ref === 'number' || typeof ref === 'boolean' ? String(ref) : JSON.stringify(ref);
}

/** A requirement (gRPC message) as its report row; see ReportRow for each column. */
export function reportRow(q: checkV1.Requirement): ReportRow {
  const completed = requirementStatus.fromProto(q.status) === 'completed';
  const subs = q.subRequirements;
  const machine = !completed ? 'pending' : subs.length > 0 && subs.every((s) => subRequirementStatus.fromProto(s.status) === 'comply') ? 'pass' : 'fail';
  const sources = [...new Set(subs.flatMap((s) => s.sources.map(sourceLabel)))];
  return {
    index: q.orderIndex,
    requirement: q.text,
    ref: refOf(q.metadataJson),
    machine_result: machine,
    score: completed && subs.length > 0 ? Math.min(...subs.map((s) => s.score)) : null,
    review_decision: q.review ? `${q.review.decision}${q.review.outdated ? ' (outdated)' : ''}` : '',
    reviewer: q.review?.reviewer ?? '',
    comment: q.review?.comment ?? '',
    evidence: subs
      .map((s) => evidenceOf(s.justification))
      .filter((q): q is string => q !== null)
      .join('\n'),
    sources: sources.join('; '),
  };
}

/** The summary of a run (gRPC message) and its project's name, at `now`. */
export function reportSummary(run: checkV1.CheckRun, projectName: string, now = new Date()): ReportSummary {
  return {
    project: projectName,
    runName: run.name,
    runId: run.id,
    status: runStatus.fromProto(run.status),
    createdAt: run.createdAt,
    processingStartedAt: run.processingStartedAt ?? null,
    processingCompletedAt: run.processingCompletedAt ?? null,
    generatedAt: now.toISOString(),
    total: run.totalRequirements,
    processed: run.processedRequirements,
    machinePassed: run.passedRequirements,
    machineFailed: run.failedRequirements,
    reviewed: run.reviewSummary?.reviewed ?? 0,
    reviewPassed: run.reviewSummary?.passed ?? 0,
    reviewFailed: run.reviewSummary?.failed ?? 0,
  };
}

/** The summary as label/value lines, in the order both the XLSX summary sheet and the PDF show them. */
export function summaryLines(s: ReportSummary): [string, string | number][] {
  return [
    ['Project', s.project],
    ['Run', s.runName],
    ['Run id', s.runId],
    ['Status', s.status],
    ['Created', s.createdAt],
    ['Processing started', s.processingStartedAt ?? ''],
    ['Processing completed', s.processingCompletedAt ?? ''],
    ['Report generated', s.generatedAt],
    ['Requirements', s.total],
    ['Checked (machine)', s.processed],
    ['Passed (machine)', s.machinePassed],
    ['Failed (machine)', s.machineFailed],
    ['Reviewed (current reviews)', s.reviewed],
    ['Passed (with reviews)', s.reviewPassed],
    ['Failed (with reviews)', s.reviewFailed],
  ];
}

/** Waits until `out` has room again when its buffer is over its high-water mark (backpressure). */
async function drained(out: Writable): Promise<void> {
  if (out.writableNeedDrain) await once(out, 'drain');
}

const clip = (v: string, max: number) => (v.length > max ? `${v.slice(0, max - 1)}…` : v);

/**
 * Writes the report of `summary` and `pages` (requirements in order, a page at a time) to `out` in
 * `format` and ends it. Pages are consumed one after the other; the file is written as they come.
 * @throws what `pages` throws (a gRPC error from a later page); `out` is then left unfinished for
 *   the caller to destroy.
 */
export async function writeReport(format: ReportFormat, summary: ReportSummary, pages: AsyncIterable<checkV1.Requirement[]>, out: PassThrough): Promise<void> {
  if (format === 'csv') return writeCsv(pages, out);
  if (format === 'xlsx') return writeXlsx(summary, pages, out);
  return writePdf(summary, pages, out);
}

/** RFC 4180: a header row of REPORT_COLUMNS, CRLF line ends, fields quoted when they need it. */
async function writeCsv(pages: AsyncIterable<checkV1.Requirement[]>, out: PassThrough): Promise<void> {
  const csv = stringify({ header: true, columns: [...REPORT_COLUMNS], record_delimiter: '\r\n' });
  csv.pipe(out);
  for await (const page of pages) {
    for (const q of page) {
      const r = reportRow(q);
      csv.write(REPORT_COLUMNS.map((c) => (c === 'score' ? (r.score ?? '') : r[c])));
    }
    await drained(out);
  }
  csv.end();
  await once(csv, 'end');
}

/** Two sheets: "Summary" (label, value) then "Requirements" (REPORT_COLUMNS, one row per requirement), streamed by exceljs's WorkbookWriter. */
async function writeXlsx(summary: ReportSummary, pages: AsyncIterable<checkV1.Requirement[]>, out: PassThrough): Promise<void> {
  const wb = new ExcelJS.stream.xlsx.WorkbookWriter({ stream: out, useStyles: true, useSharedStrings: false });
  wb.creator = 'kb check report';
  const sum = wb.addWorksheet('Summary');
  sum.columns = [
    { header: 'Field', key: 'field', width: 28 },
    { header: 'Value', key: 'value', width: 60 },
  ];
  sum.getRow(1).font = { bold: true };
  for (const [field, value] of summaryLines(summary)) sum.addRow({ field, value }).commit();
  sum.commit();
  const sheet = wb.addWorksheet('Requirements', { views: [{ state: 'frozen', ySplit: 1 }] });
  const widths: Record<string, number> = { requirement: 60, comment: 40, evidence: 60, sources: 40 };
  sheet.columns = REPORT_COLUMNS.map((c) => ({ header: c, key: c, width: widths[c] ?? 14 }));
  sheet.getRow(1).font = { bold: true };
  sheet.getRow(1).commit();
  for await (const page of pages) {
    for (const q of page) {
      const r = reportRow(q);
      const row = sheet.addRow(
        Object.fromEntries(
          REPORT_COLUMNS.map((c) => [c, c === 'index' ? r.index : c === 'score' ? (r.score ?? null) : clip(String(r[c]), XLSX_CELL_MAX_CHARS)]),
        ),
      );
      row.alignment = { wrapText: true, vertical: 'top' };
      row.commit();
    }
    await drained(out);
  }
  sheet.commit();
  await wb.commit();
}

/**
 * Text that the PDF's standard font (Helvetica, WinAnsi) can draw: typographic quotes and dashes
 * kept, other characters outside Latin-1 shown as '?'.
 */
export function pdfText(s: string): string {
  return s.replace(/[^\t\n\r\x20-\x7e\xa0-\xff‘’“”–—…•€]/gu, '?');
}

/** A4 portrait: the summary, then one entry per requirement (heading, text, result line, review, evidence, sources). */
async function writePdf(summary: ReportSummary, pages: AsyncIterable<checkV1.Requirement[]>, out: PassThrough): Promise<void> {
  const doc = new PDFDocument({ size: 'A4', margin: 50, info: { Title: pdfText(`Check run report: ${summary.runName}`), Creator: 'kb' } });
  doc.pipe(out);
  doc
    .font('Helvetica-Bold')
    .fontSize(16)
    .text(pdfText(`Check run report: ${summary.runName}`));
  doc.moveDown(0.5);
  for (const [label, value] of summaryLines(summary)) {
    doc
      .font('Helvetica-Bold')
      .fontSize(10)
      .text(`${label}: `, { continued: true })
      .font('Helvetica')
      .text(pdfText(String(value === '' ? '-' : value)));
  }
  doc.moveDown();
  doc.font('Helvetica-Bold').fontSize(13).text('Requirements');
  for await (const page of pages) {
    for (const q of page) {
      const r = reportRow(q);
      doc.moveDown(0.6);
      doc
        .font('Helvetica-Bold')
        .fontSize(11)
        .text(pdfText(`#${r.index}${r.ref ? ` [${r.ref}]` : ''}`));
      doc.font('Helvetica').fontSize(10).text(pdfText(r.requirement));
      const review = r.review_decision ? `${r.review_decision} by ${r.reviewer}` : 'not reviewed';
      doc.font('Helvetica-Bold').text(pdfText(`Machine: ${r.machine_result}   Score: ${r.score === null ? '-' : r.score.toFixed(2)}   Review: ${review}`));
      doc.font('Helvetica').fontSize(9);
      if (r.comment) doc.text(pdfText(`Comment: ${r.comment}`));
      if (r.evidence) doc.text(pdfText(`Evidence: ${r.evidence}`));
      if (r.sources) doc.text(pdfText(`Sources: ${r.sources}`));
    }
    await drained(out);
  }
  doc.end();
  await once(out, 'finish');
}
