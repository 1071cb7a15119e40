import type { QuoteBox as Box } from '@kb/knowledge';
import { execFileSync } from 'node:child_process';
import { api, corpusFile, newOrg, uploadFile, waitForDocument } from './support/harness';

jest.setTimeout(600_000);

/**
 * Where a quote stands (decisions.md "Where a quote stands (for highlighting)", issue 28 item 6)
 * through the real stack: word boxes stored with the chunks at ingestion (poppler for a text PDF,
 * tesseract for a scanned one), `location` and `boxes` on verify sources and agent citations, and
 * `GET /api/v2/documents/{id}/pages/{n}`. Boxes are checked against poppler's own reading of the page.
 */
const POAM = 'pdf/fedramp_guide_poam_rev5.pdf';
const SCANNED = 'pdf_scanned/ocrmypdf_linn.pdf';
const MARKDOWN = 'markdown/datica_11-incident_response_policy.md';

/** Poppler's words of one page (`pdftotext -bbox-layout`): text and box in points, top-left origin. */
function popplerWords(file: string, page: number): { text: string; box: Box }[] {
  const xhtml = execFileSync('pdftotext', ['-bbox-layout', '-enc', 'UTF-8', '-f', String(page), '-l', String(page), file, '-'], { encoding: 'utf8' });
  const words: { text: string; box: Box }[] = [];
  for (const m of xhtml.matchAll(/<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)<\/word>/g)) {
    words.push({ text: m[5].replace(/&amp;/g, '&'), box: { page, x0: +m[1], y0: +m[2], x1: +m[3], y1: +m[4] } });
  }
  return words;
}

const within = (w: Box, b: Box) => w.page === b.page && w.x0 >= b.x0 - 0.02 && w.x1 <= b.x1 + 0.02 && w.y0 >= b.y0 - 0.02 && w.y1 <= b.y1 + 0.02;

describe('where a quote stands', () => {
  let key: string;
  let otherKey: string;
  let projectId: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    ({ key } = newOrg('E2E Quote locations'));
    ({ key: otherKey } = newOrg('E2E Quote locations other'));
    projectId = (await api(key).post('/api/v2/projects').send({ name: 'Highlighting' })).body.data.id;
    ids.pdf = await uploadFile(key, { path: corpusFile(POAM) }, projectId);
    ids.markdown = await uploadFile(key, { path: corpusFile(MARKDOWN) }, projectId);
    ids.scanned = await uploadFile(key, { path: corpusFile(SCANNED) }, projectId);
    expect(
      (
        await api(key)
          .post('/api/v2/documents/process')
          .send({ document_ids: Object.values(ids) })
      ).status,
    ).toBe(200);
    for (const id of Object.values(ids)) expect((await waitForDocument(key, id, 540_000)).status).toBe('completed');
  });

  it('verify: the evidence on page 7 of a PDF has its offsets in the chunk text and one box per line covering each of its words', async () => {
    const res = await api(key)
      .post('/api/v2/check/verify')
      .send({ project_id: projectId, handbook_ids: [ids.pdf], requirement: 'The FedRAMP OSCAL Registry must be offered in XML and JSON formats.' });
    expect(res.status).toBe(200);
    const v = res.body.data;
    expect(v.evidence).toContain('XML and JSON');
    const [source] = v.sources;
    expect(source).toMatchObject({ handbook_id: ids.pdf, start_page: 7, end_page: 7 });

    const chunk = (await api(key).get(`/api/v2/documents/${ids.pdf}/chunks/${source.node_id}`)).body.data;
    expect(chunk.text.slice(source.location.char_start, source.location.char_end)).toBe(v.evidence);

    const size = (await api(key).get(`/api/v2/documents/${ids.pdf}/pages/7`)).body.data;
    expect(size).toEqual({ page: 7, width: 612, height: 792 });
    expect(source.boxes.length).toBeGreaterThan(0);
    for (const b of source.boxes as Box[]) {
      expect(b.page).toBe(7);
      expect(0 <= b.x0 && b.x0 < b.x1 && b.x1 <= size.width && 0 <= b.y0 && b.y0 < b.y1 && b.y1 <= size.height).toBe(true);
    }

    // Every word of the quote, as poppler reads it on the page, lies inside one of the boxes. Matched word by word,
    // not as one run: poppler's reading order may put a heading inside the quote elsewhere (the quote can span one).
    const words = popplerWords(corpusFile(POAM), 7);
    const tokens: string[] = v.evidence.split(/\s+/).filter(Boolean);
    const inBox = (w: { box: Box }) => (source.boxes as Box[]).some((b) => within(w.box, b));
    const covered = tokens.map((t) => words.find((w) => w.text === t && inBox(w))).filter((w): w is (typeof words)[number] => w !== undefined);
    expect(covered.length).toBeGreaterThanOrEqual(tokens.length - 2);
    // One box per line: no two boxes of the quote share a line.
    const lines = new Set(covered.map((w) => Math.round(w.box.y1)));
    expect(source.boxes.length).toBeLessThanOrEqual(lines.size);
  });

  it('check runs: sub-requirement sources carry the location and boxes stored with the verdict', async () => {
    const created = await api(key)
      .post('/api/v2/check/runs')
      .send({
        project_id: projectId,
        handbook_ids: [ids.pdf],
        name: 'Boxes',
        requirements: [{ text: 'The FedRAMP OSCAL Registry must be offered in XML and JSON formats.' }],
      });
    expect(created.status).toBe(201);
    expect((await api(key).post(`/api/v2/check/runs/${created.body.data.id}/trigger`).send({ skip_breakdown: true })).status).toBe(200);
    let run: any;
    for (const deadline = Date.now() + 300_000; ;) {
      run = (await api(key).get(`/api/v2/check/runs/${created.body.data.id}`)).body.data;
      if (run.status === 'completed' || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(run.status).toBe('completed');
    const [sub] = run.requirements[0].sub_requirements;
    const [source] = sub.sources;
    const chunk = (await api(key).get(`/api/v2/documents/${ids.pdf}/chunks/${source.node_id}`)).body.data;
    const quote = chunk.text.slice(source.location.char_start, source.location.char_end);
    expect(quote).toContain('XML and JSON');
    // The stored justification quotes it with its whitespace collapsed (libs/events justification.ts).
    expect(sub.justification).toContain(quote.replace(/\s+/g, ' ').trim());
    expect(source.boxes.length).toBeGreaterThan(0);
    expect(source.boxes.every((b: Box) => b.page >= source.start_page && b.page <= source.end_page)).toBe(true);
    const listed = (await api(key).get(`/api/v2/check/runs/${created.body.data.id}/requirements`)).body.data;
    expect(listed[0].sub_requirements[0].sources[0]).toEqual(source);
  });

  it('agent citations: offsets into the chunk text everywhere, boxes for the PDF, [] for Markdown', async () => {
    const md = await api(key)
      .post('/api/v2/agent/query')
      .send({ question: 'Who must be notified of a security incident?', project_id: projectId, document_ids: [ids.markdown] });
    expect(md.status).toBe(200);
    expect(md.body.data.citations.length).toBeGreaterThan(0);
    for (const c of md.body.data.citations) {
      const chunk = (await api(key).get(`/api/v2/documents/${c.document_id}/chunks/${c.chunk_id}`)).body.data;
      expect(chunk.text.slice(c.location.char_start, c.location.char_end)).toBe(c.quote);
      expect(c.boxes).toEqual([]);
    }
    const pdf = await api(key)
      .post('/api/v2/agent/query')
      .send({ question: 'In which formats is the FedRAMP OSCAL Registry offered?', project_id: projectId, document_ids: [ids.pdf] });
    expect(pdf.status).toBe(200);
    const [c] = pdf.body.data.citations;
    const chunk = (await api(key).get(`/api/v2/documents/${ids.pdf}/chunks/${c.chunk_id}`)).body.data;
    expect(chunk.text.slice(c.location.char_start, c.location.char_end)).toBe(c.quote);
    expect(c.boxes.length).toBeGreaterThan(0);
    for (const b of c.boxes as Box[]) expect(b.page >= c.start_page && b.page <= c.end_page).toBe(true);
  });

  it('a scanned PDF gets its boxes from OCR, inside the page', async () => {
    const res = await api(key)
      .post('/api/v2/agent/query')
      .send({ question: 'How many tracks does the LinnSequencer record?', project_id: projectId, document_ids: [ids.scanned] });
    expect(res.status).toBe(200);
    const [c] = res.body.data.citations;
    expect(c.document_id).toBe(ids.scanned);
    const chunk = (await api(key).get(`/api/v2/documents/${ids.scanned}/chunks/${c.chunk_id}`)).body.data;
    expect(chunk.text.slice(c.location.char_start, c.location.char_end)).toBe(c.quote);
    expect(c.boxes.length).toBeGreaterThan(0);
    const size = (await api(key).get(`/api/v2/documents/${ids.scanned}/pages/${c.boxes[0].page}`)).body.data;
    for (const b of c.boxes as Box[]) expect(0 <= b.x0 && b.x0 < b.x1 && b.x1 <= size.width && 0 <= b.y0 && b.y0 < b.y1 && b.y1 <= size.height).toBe(true);
  });

  it('GET …/pages/{n}: 404 past the last page, for a format without pages, an unknown document and another org; 400 for a bad n', async () => {
    const ok = await api(key).get(`/api/v2/documents/${ids.pdf}/pages/37`);
    expect(ok.status).toBe(200);
    expect(ok.body.data).toEqual({ page: 37, width: 612, height: 792 });
    const past = await api(key).get(`/api/v2/documents/${ids.pdf}/pages/38`);
    expect([past.status, past.body.error.code, past.body.error.message]).toEqual([
      404,
      'NOT_FOUND',
      `Document ${ids.pdf} has 37 pages; page 38 does not exist.`,
    ]);
    const md = await api(key).get(`/api/v2/documents/${ids.markdown}/pages/1`);
    expect([md.status, md.body.error.code]).toEqual([404, 'NOT_FOUND']);
    expect(md.body.error.message).toMatch(/has no pages: its format \(text\/markdown\) is not paged/);
    expect((await api(key).get('/api/v2/documents/3f1c9a52-7d0e-4b41-9c2a-6e8d4b7f0a13/pages/1')).status).toBe(404);
    const other = await api(otherKey).get(`/api/v2/documents/${ids.pdf}/pages/1`);
    expect([other.status, other.body.error.code]).toEqual([404, 'NOT_FOUND']);
    for (const n of ['0', '-1', 'abc', '1.5', '01', '2147483648', '99999999999']) {
      const bad = await api(key).get(`/api/v2/documents/${ids.pdf}/pages/${n}`);
      expect([n, bad.status, bad.body.error?.code]).toEqual([n, 400, 'VALIDATION_ERROR']);
    }
    expect((await api(key).get(`/api/v2/documents/not-a-uuid/pages/1`)).status).toBe(400);
  });
});
