import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { requirementStatus, runStatus, subRequirementStatus } from '@kb/events';
import { checkV1 } from '@kb/proto';
import { parse } from 'csv-parse/sync';
import ExcelJS from 'exceljs';
import { REPORT_COLUMNS, ReportFormat, reportRow, reportSummary, writeReport } from './report';

function requirement(i: number, opts: { completed?: boolean; comply?: boolean; review?: checkV1.RequirementReview; ref?: unknown } = {}): checkV1.Requirement {
  const completed = opts.completed ?? true;
  return {
    id: `req-${i}`,
    runId: 'run-1',
    text: `Requirement ${i}: scaffolds, "ladders" and hoists are inspected, before each shift.`,
    orderIndex: i,
    status: requirementStatus.toProto(completed ? 'completed' : 'pending'),
    metadataJson: opts.ref === undefined ? '' : JSON.stringify({ ref: opts.ref, other: 1 }),
    createdAt: '2026-11-22T04:00:00.000Z',
    updatedAt: '2026-11-22T04:00:00.000Z',
    review: opts.review,
    subRequirements: completed
      ? [
          {
            id: `sub-${i}-a`,
            requirementId: `req-${i}`,
            text: 'part a',
            justification: 'The plan states it.\nEvidence: "Scaffolds are inspected before every shift."',
            score: 0.9,
            status: subRequirementStatus.toProto('comply'),
            hasSources: true,
            sources: [{ handbookId: 'h1', nodeId: 'n1', title: 'site-plan.pdf', startPage: 4, endPage: 5, section: undefined, location: undefined, boxes: [] }],
          },
          {
            id: `sub-${i}-b`,
            requirementId: `req-${i}`,
            text: 'part b',
            justification: 'Nothing found.',
            score: 0.31,
            status: subRequirementStatus.toProto(opts.comply === false ? 'not-comply' : 'comply'),
            hasSources: true,
            sources: [
              { handbookId: 'h1', nodeId: 'n1', title: 'site-plan.pdf', startPage: 4, endPage: 5, section: undefined, location: undefined, boxes: [] },
              {
                handbookId: 'h2',
                nodeId: 'n2',
                title: 'notes.txt',
                startPage: undefined,
                endPage: undefined,
                section: undefined,
                location: undefined,
                boxes: [],
              },
            ],
          },
        ]
      : [],
  };
}

const RUN: checkV1.CheckRun = {
  id: 'run-1',
  orgId: 'org',
  projectId: 'p',
  name: 'Quarterly audit',
  status: runStatus.toProto('stopped'),
  totalRequirements: 1000,
  processedRequirements: 999,
  passedRequirements: 998,
  failedRequirements: 1,
  createdAt: '2026-11-22T04:00:00.000Z',
  updatedAt: '2026-11-22T04:05:00.000Z',
  processingStartedAt: '2026-11-22T04:01:00.000Z',
  processingCompletedAt: undefined,
  handbookIds: [],
  requirements: [],
  reviewSummary: { reviewed: 1, passed: 998, failed: 1 },
};

const REVIEW: checkV1.RequirementReview = {
  decision: 'fail',
  comment: 'Plan is the 2024 edition.',
  reviewer: 'Dana Reviewer',
  reviewedAt: '2026-11-22T05:00:00.000Z',
  outdated: false,
};

/** 1,000 requirements in pages of 200: #0 reviewed with a ref, #1 failing, #999 pending. */
async function* pages() {
  for (let p = 0; p < 5; p++) {
    yield Array.from({ length: 200 }, (_, k) => {
      const i = p * 200 + k;
      return requirement(i, { review: i === 0 ? REVIEW : undefined, ref: i === 0 ? '4.2.1' : undefined, comply: i !== 1, completed: i !== 999 });
    });
  }
}

async function render(format: ReportFormat): Promise<Buffer> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  const ended = new Promise((resolve) => out.on('end', resolve));
  await writeReport(format, reportSummary(RUN, 'Riverside depot', new Date('2026-11-23T00:00:00Z')), pages(), out);
  await ended;
  return Buffer.concat(chunks);
}

describe('check run reports (decisions.md "Reports")', () => {
  it('a row: machine result from the sub-requirements, lowest score, ref, review, evidence quotes and distinct sources', () => {
    expect(reportRow(requirement(0, { review: REVIEW, ref: '4.2.1', comply: false }))).toEqual({
      index: 0,
      requirement: expect.stringContaining('Requirement 0'),
      ref: '4.2.1',
      machine_result: 'fail',
      score: 0.31,
      review_decision: 'fail',
      reviewer: 'Dana Reviewer',
      comment: 'Plan is the 2024 edition.',
      evidence: 'Scaffolds are inspected before every shift.',
      sources: 'site-plan.pdf p.4-5; notes.txt',
    });
    expect(reportRow(requirement(3, { review: { ...REVIEW, outdated: true } })).review_decision).toBe('fail (outdated)');
    expect(reportRow(requirement(4, { completed: false }))).toMatchObject({
      machine_result: 'pending',
      score: null,
      evidence: '',
      sources: '',
      review_decision: '',
    });
    expect(reportRow(requirement(5, { ref: 12 })).ref).toBe('12');
  });

  it('CSV (RFC 4180): header row, one row per requirement in order, CRLF, quoted fields parse back', async () => {
    const buf = await render('csv');
    expect(buf.toString('utf8').startsWith(`${REPORT_COLUMNS.join(',')}\r\n`)).toBe(true);
    const rows: Record<string, string>[] = parse(buf, { columns: true });
    expect(rows).toHaveLength(1000);
    expect(rows.map((r) => Number(r.index))).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(rows[0]).toMatchObject({
      ref: '4.2.1',
      machine_result: 'pass',
      score: '0.31',
      review_decision: 'fail',
      reviewer: 'Dana Reviewer',
      comment: 'Plan is the 2024 edition.',
    });
    expect(rows[0].requirement).toContain('"ladders"');
    expect(rows[1].machine_result).toBe('fail');
    expect(rows[999]).toMatchObject({ machine_result: 'pending', score: '' });
  });

  it('XLSX: a Summary sheet, then a Requirements sheet with one row per requirement (1,000, read back with exceljs)', async () => {
    const wb = new ExcelJS.Workbook();
    await wb.xlsx.load((await render('xlsx')) as unknown as ArrayBuffer);
    expect(wb.worksheets.map((w) => w.name)).toEqual(['Summary', 'Requirements']);
    const summary = new Map<string, unknown>();
    wb.getWorksheet('Summary')!.eachRow((row, n) => n > 1 && summary.set(String(row.getCell(1).value), row.getCell(2).value));
    expect(Object.fromEntries(summary)).toMatchObject({
      Project: 'Riverside depot',
      Run: 'Quarterly audit',
      Status: 'stopped',
      Requirements: 1000,
      'Reviewed (current reviews)': 1,
    });
    const sheet = wb.getWorksheet('Requirements')!;
    expect(sheet.rowCount).toBe(1001);
    expect((sheet.getRow(1).values as unknown[]).slice(1)).toEqual([...REPORT_COLUMNS]);
    expect((sheet.getRow(2).values as unknown[]).slice(1, 9)).toEqual([
      0,
      expect.stringContaining('Requirement 0'),
      '4.2.1',
      'pass',
      0.31,
      'fail',
      'Dana Reviewer',
      'Plan is the 2024 edition.',
    ]);
    expect(sheet.getRow(1001).getCell(4).value).toBe('pending');
  });

  it('PDF: the summary first, then every requirement (text read back with pdftotext)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'kb-report-'));
    writeFileSync(path.join(dir, 'r.pdf'), await render('pdf'));
    const text = execFileSync('pdftotext', ['-layout', path.join(dir, 'r.pdf'), '-'], { encoding: 'utf8' });
    expect(text).toContain('Check run report: Quarterly audit');
    expect(text.indexOf('Project: Riverside depot')).toBeLessThan(text.indexOf('#0 [4.2.1]'));
    expect(text).toContain('Review: fail by Dana Reviewer');
    for (const i of [1, 500, 998, 999]) expect(text).toContain(`#${i}\n`);
    expect(text).toMatch(/Machine: pending\s+Score: -/);
  });
});
