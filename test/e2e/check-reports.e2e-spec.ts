import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import ExcelJS from 'exceljs';
import { api, corpusFile, createProject, newOrg, processDocuments, uploadFile, waitForRun } from './support/harness';

jest.setTimeout(600_000);

/**
 * Reports of check runs end to end (decisions.md "Reports", docs/check.md "Reports"): a completed
 * run over a real PDF of the corpus with a reviewed requirement, downloaded as XLSX, CSV and PDF and
 * read back (exceljs, csv-parse, poppler's pdftotext); the headers; 409 for a pending run, 404 for
 * another organization's run, 400 for a bad format; and a 1,000-requirement run (stopped right after
 * its trigger) whose XLSX and PDF open with every requirement.
 */
const COLUMNS = ['index', 'requirement', 'ref', 'machine_result', 'score', 'review_decision', 'reviewer', 'comment', 'evidence', 'sources'];

/** GET with the body kept as bytes (the report is a file; errors are the JSON envelope, parsed into `json`). */
async function download(key: string, p: string) {
  const res = await api(key)
    .get(p)
    .buffer(true)
    .parse((r, cb) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () => cb(null, Buffer.concat(chunks)));
    });
  const bytes = res.body as Buffer;
  const json = String(res.headers['content-type'] ?? '').startsWith('application/json') ? JSON.parse(bytes.toString('utf8')) : null;
  return { status: res.status, headers: res.headers, bytes, json };
}

function pdfText(bytes: Buffer): string {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'kb-report-e2e-')), 'report.pdf');
  writeFileSync(file, bytes);
  return execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

async function workbook(bytes: Buffer): Promise<ExcelJS.Workbook> {
  const wb = new ExcelJS.Workbook();
  await wb.xlsx.load(bytes as unknown as ArrayBuffer);
  return wb;
}

function summaryOf(wb: ExcelJS.Workbook): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  wb.getWorksheet('Summary')!.eachRow((row, n) => {
    if (n > 1) out[String(row.getCell(1).value)] = row.getCell(2).value;
  });
  return out;
}

describe('reports of check runs', () => {
  let key: string;
  let projectId: string;
  let run: any;
  const REQUIREMENTS = [
    { text: 'This form must be kept in the establishment for 5 years.', metadata: { ref: 'OSHA-101.1' } },
    { text: 'Failure to maintain the form can result in citations and penalties.' },
    { text: 'Forklift drivers must hold a valid licence renewed every year.', metadata: { row: 3 } },
  ];

  beforeAll(async () => {
    ({ key } = newOrg('E2E Reports'));
    projectId = await createProject(key, 'Injury records');
    const docId = await uploadFile(key, { path: corpusFile('pdf/dol_osha-101_injury_illness_incident_report.pdf') }, projectId);
    await processDocuments(key, [docId]);
    const created = await api(key).post('/api/v2/check/runs').send({ project_id: projectId, name: 'OSHA 101 audit', requirements: REQUIREMENTS });
    expect(created.status).toBe(201);
    expect((await api(key).post(`/api/v2/check/runs/${created.body.data.id}/trigger`).send({ skip_breakdown: true })).status).toBe(200);
    run = await waitForRun(key, created.body.data.id, ['completed']);
    const reviewed = await api(key)
      .put(`/api/v2/check/runs/${run.id}/requirements/${run.requirements[0].id}/review`)
      .send({ decision: 'fail', reviewer: 'Dana Reviewer', comment: 'The form says five years; our copy is missing, "kept" is not shown.' });
    expect(reviewed.status).toBe(200);
    run = (await api(key).get(`/api/v2/check/runs/${run.id}`)).body.data;
  });

  /** What each row must show for requirement `q` of the run detail. */
  function expected(q: any) {
    const subs = q.sub_requirements;
    const machine = subs.length > 0 && subs.every((s: any) => s.status === 'comply') ? 'pass' : 'fail';
    return {
      machine,
      score: Math.min(...subs.map((s: any) => s.score)),
      sources: [...new Set(subs.flatMap((s: any) => s.sources.map((x: any) => `${x.title} p.${x.start_page}-${x.end_page}`)))] as string[],
    };
  }

  it('XLSX is the default: headers, a Summary sheet (project, run, status, dates, counts) and one row per requirement with the review', async () => {
    const res = await download(key, `/api/v2/check/runs/${run.id}/report`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="run-${run.id}.xlsx"`);
    const wb = await workbook(res.bytes);
    expect(wb.worksheets.map((w) => w.name)).toEqual(['Summary', 'Requirements']);
    expect(summaryOf(wb)).toMatchObject({
      Project: 'Injury records',
      Run: 'OSHA 101 audit',
      'Run id': run.id,
      Status: 'completed',
      Created: run.created_at,
      'Processing started': run.processing_started_at,
      'Processing completed': run.processing_completed_at,
      Requirements: 3,
      'Checked (machine)': 3,
      'Passed (machine)': run.passed_requirements,
      'Failed (machine)': run.failed_requirements,
      'Reviewed (current reviews)': 1,
      'Passed (with reviews)': run.review_summary.passed,
      'Failed (with reviews)': run.review_summary.failed,
    });
    const sheet = wb.getWorksheet('Requirements')!;
    expect(sheet.rowCount).toBe(4);
    expect((sheet.getRow(1).values as unknown[]).slice(1)).toEqual(COLUMNS);
    run.requirements.forEach((q: any, i: number) => {
      const cells = (sheet.getRow(i + 2).values as unknown[]).slice(1);
      const e = expected(q);
      expect(cells.slice(0, 5)).toEqual([i, q.text, i === 0 ? 'OSHA-101.1' : undefined, e.machine, e.score]);
      if (e.sources.length > 0) expect(cells[9]).toBe(e.sources.join('; '));
    });
    expect((sheet.getRow(2).values as unknown[]).slice(6, 9)).toEqual([
      'fail',
      'Dana Reviewer',
      'The form says five years; our copy is missing, "kept" is not shown.',
    ]);
    // The first requirement is a verbatim line of the form: its evidence quote is in the report.
    expect(String(sheet.getRow(2).getCell(9).value ?? '')).toMatch(/5 years/);
  });

  it('CSV: RFC 4180 with a header row, one row per requirement in order, the review and sources', async () => {
    const res = await download(key, `/api/v2/check/runs/${run.id}/report?format=csv`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="run-${run.id}.csv"`);
    expect(res.bytes.toString('utf8').startsWith(`${COLUMNS.join(',')}\r\n`)).toBe(true);
    const rows: Record<string, string>[] = parse(res.bytes, { columns: true });
    expect(rows.map((r) => r.requirement)).toEqual(REQUIREMENTS.map((r) => r.text));
    expect(rows[0]).toMatchObject({
      index: '0',
      ref: 'OSHA-101.1',
      review_decision: 'fail',
      reviewer: 'Dana Reviewer',
      comment: 'The form says five years; our copy is missing, "kept" is not shown.',
    });
    expect(rows[2]).toMatchObject({ ref: '', review_decision: '', reviewer: '', comment: '' });
    run.requirements.forEach((q: any, i: number) => {
      const e = expected(q);
      expect({ machine: rows[i].machine_result, score: Number(rows[i].score) }).toEqual({ machine: e.machine, score: e.score });
      if (e.sources.length > 0) expect(rows[i].sources).toBe(e.sources.join('; '));
    });
  });

  it('PDF: the summary first, then every requirement with its result and review (pdftotext)', async () => {
    const res = await download(key, `/api/v2/check/runs/${run.id}/report?format=pdf`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/pdf');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="run-${run.id}.pdf"`);
    expect(res.bytes.subarray(0, 5).toString()).toBe('%PDF-');
    const text = pdfText(res.bytes).replace(/[ \t]+/g, ' ');
    expect(text).toContain('Check run report: OSHA 101 audit');
    expect(text).toContain('Project: Injury records');
    expect(text).toContain('Status: completed');
    expect(text).toContain('Reviewed (current reviews): 1');
    expect(text.indexOf('Project: Injury records')).toBeLessThan(text.indexOf('#0 [OSHA-101.1]'));
    expect(text).toContain('Review: fail by Dana Reviewer');
    for (const [i, q] of run.requirements.entries()) {
      expect(text).toContain(`#${i}`);
      expect(text).toContain(`Machine: ${expected(q).machine}`);
    }
    expect(text).toContain('Forklift drivers must hold a valid licence');
  });

  it('409 for a pending run, 404 for another organization, 400 for a bad format or id (envelope)', async () => {
    const pending = await api(key)
      .post('/api/v2/check/runs')
      .send({ project_id: projectId, name: 'Not yet', requirements: [{ text: 'Anything.' }] });
    const conflict = await download(key, `/api/v2/check/runs/${pending.body.data.id}/report?format=csv`);
    expect([conflict.status, conflict.json?.success, conflict.json?.error.code]).toEqual([409, false, 'CONFLICT']);
    const other = newOrg('E2E Reports other');
    const missing = await download(other.key, `/api/v2/check/runs/${run.id}/report`);
    expect([missing.status, missing.json?.error.code]).toEqual([404, 'NOT_FOUND']);
    const bad = await download(key, `/api/v2/check/runs/${run.id}/report?format=docx`);
    expect([bad.status, bad.json?.error.code]).toEqual([400, 'VALIDATION_ERROR']);
    expect(bad.json?.error.message).toMatch(/format must be one of: xlsx, csv, pdf/);
    expect((await download(key, '/api/v2/check/runs/not-a-uuid/report')).status).toBe(400);
  });

  it('a 1,000-requirement run (stopped after its trigger) reports every requirement in XLSX, PDF and CSV', async () => {
    const created = await api(key)
      .post('/api/v2/check/runs')
      .send({
        project_id: projectId,
        name: 'Large audit',
        requirements: Array.from({ length: 1000 }, (_, i) => ({
          text: `Requirement ${i + 1}: injury records of category ${i + 1} are kept for 5 years.`,
          metadata: { ref: `R-${i + 1}` },
        })),
      });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    expect((await api(key).post(`/api/v2/check/runs/${id}/trigger`).send({ skip_breakdown: true })).status).toBe(200);
    const stopped = await api(key).post(`/api/v2/check/runs/${id}/stop`);
    expect(stopped.status).toBe(200);
    const started = Date.now();
    const xlsx = await download(key, `/api/v2/check/runs/${id}/report?format=xlsx`);
    expect(xlsx.status).toBe(200);
    const wb = await workbook(xlsx.bytes);
    expect(summaryOf(wb)).toMatchObject({ Run: 'Large audit', Status: 'stopped', Requirements: 1000 });
    const sheet = wb.getWorksheet('Requirements')!;
    expect(sheet.rowCount).toBe(1001);
    for (let i = 0; i < 1000; i++) expect([sheet.getRow(i + 2).getCell(1).value, sheet.getRow(i + 2).getCell(3).value]).toEqual([i, `R-${i + 1}`]);
    const results = new Set<string>();
    for (let i = 0; i < 1000; i++) results.add(String(sheet.getRow(i + 2).getCell(4).value));
    expect([...results].every((r) => ['pass', 'fail', 'pending'].includes(r))).toBe(true);

    const pdf = await download(key, `/api/v2/check/runs/${id}/report?format=pdf`);
    expect(pdf.status).toBe(200);
    const text = pdfText(pdf.bytes);
    expect(text).toContain('Requirements: 1000');
    for (const i of [0, 1, 499, 998, 999]) expect(text).toContain(`#${i} [R-${i + 1}]`);
    expect(text.match(/^\s*#\d+ \[R-\d+\]\s*$/gm)?.length).toBe(1000);

    const csv = await download(key, `/api/v2/check/runs/${id}/report?format=csv`);
    expect(parse(csv.bytes, { columns: true }).length).toBe(1000);
    process.stdout.write(
      `1,000-requirement reports (xlsx ${xlsx.bytes.length} B, pdf ${pdf.bytes.length} B, csv ${csv.bytes.length} B) downloaded and parsed in ${Date.now() - started} ms\n`,
    );
  });
});
