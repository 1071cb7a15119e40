import { createAsyncClient } from '@kb/common';
import { retrievalV1 } from '@kb/proto';
import { analyze } from '@kb/text';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { wordOverlap } from '../../apps/ingestion/src/extraction/testing/corpus';
import { api, CONTENT_TYPES, CORPUS, corpusFile, newOrg, uploadFile, waitForDocument } from './support/harness';

jest.setTimeout(600_000);

/** ODT, accepted beyond the contract's twelve types: no corpus file, so the extraction spec's pandoc-written fixture. */
const ODT_FIXTURE = path.resolve(__dirname, '../../apps/ingestion/src/extraction/testing/heat-illness-plan.odt');

/**
 * Every file of ../shared/corpus through the gateway: upload, process, and each ends `completed`
 * (or `failed` with a message a user can act on). Content checks: citations name the exact
 * 1-based page of known passages, table chunks repeat their header row (XLSX, CSV, DOCX), and the
 * OCR of a scanned page matches its ground truth. Of the scanned PDFs only ocrmypdf_linn.pdf is
 * ingested here (OCR is slow on a shared CI machine); the others are covered by `npm run bench:ingest`
 * and the OCR unit tests (rotated pages).
 */
describe('ingestion of every corpus format', () => {
  const org = newOrg('Formats Org');
  const a = api(org.key);
  const ids = new Map<string, string>();
  const docs = new Map<string, any>();
  let retrieval: ReturnType<typeof createAsyncClient<typeof retrievalV1.RetrievalServiceService>>;

  /** Corpus files (relative paths) of a type the service accepts; of the scanned PDFs only linn. */
  function corpusFiles(): string[] {
    const out: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(path.join(CORPUS, dir)).sort()) {
        const rel = path.join(dir, name);
        if (statSync(path.join(CORPUS, rel)).isDirectory()) walk(rel);
        else if (CONTENT_TYPES[path.extname(name)]) out.push(rel);
      }
    };
    walk('');
    return out.filter((rel) => !rel.startsWith('pdf_scanned/') || !rel.endsWith('.pdf') || rel === 'pdf_scanned/ocrmypdf_linn.pdf');
  }

  /**
   * Every chunk of a document that contains a term of `query` (the index's own search, top 100).
   * Search is hybrid, so the dense half also returns chunks near the query in meaning that share no
   * term with it; those are left out by comparing analyzed terms (stop words out, stemmed), which
   * keeps exactly the chunks BM25 can match.
   */
  async function chunksMatching(id: string, query: string): Promise<retrievalV1.Chunk[]> {
    const res = await retrieval.search(
      { query, documentIds: [id], excludeDocumentIds: [], topK: 100, corpus: retrievalV1.Corpus.CORPUS_ORG },
      { orgId: org.orgId },
    );
    const terms = new Set(analyze(query));
    return res.hits
      .map((h) => h.chunk!)
      .filter((c) => analyze(`${c.headingPath.join(' ')} ${c.text}`).some((t) => terms.has(t)))
      .sort((x, y) => x.chunkIndex - y.chunkIndex);
  }

  beforeAll(async () => {
    const stack = JSON.parse(readFileSync(path.join(process.env.KB_E2E_DATA_DIR!, 'stack.json'), 'utf8'));
    retrieval = createAsyncClient(retrievalV1.RetrievalServiceService, `127.0.0.1:${stack.ports.retrieval}`);
    const files = corpusFiles();
    expect(files.length).toBeGreaterThan(40);
    for (const rel of files) {
      ids.set(rel, await uploadFile(org.key, { path: corpusFile(rel), name: path.basename(rel), contentType: CONTENT_TYPES[path.extname(rel)] }));
    }
    ids.set('heat-illness-plan.odt', await uploadFile(org.key, { path: ODT_FIXTURE, name: 'heat-illness-plan.odt', contentType: CONTENT_TYPES['.odt'] }));
    const res = await a.post('/api/v2/documents/process').send({ document_ids: [...ids.values()] });
    expect(res.status).toBe(200);
    expect(res.body.data.processed).toHaveLength(ids.size);
    for (const [rel, id] of ids) docs.set(rel, await waitForDocument(org.key, id, 480_000));
  });

  afterAll(() => retrieval?.close());

  it('ends every file completed with chunks, except the near-empty DOCX, which says there is no text', () => {
    const outcomes = [...docs].map(([rel, d]) => ({ rel, status: d.status, error: d.error_message, chunks: d.chunk_count > 0 }));
    const nearEmpty = outcomes.find((o) => o.rel.includes('NEAR-EMPTY'))!;
    // The placeholder has a 4-word title: indexing those words or saying there is no text are both acceptable.
    if (nearEmpty.status === 'failed') expect(nearEmpty.error).toMatch(/no text/i);
    else expect(nearEmpty).toMatchObject({ status: 'completed', error: null, chunks: true });
    expect(outcomes.filter((o) => o !== nearEmpty)).toEqual(
      outcomes.filter((o) => o !== nearEmpty).map((o) => ({ rel: o.rel, status: 'completed', error: null, chunks: true })),
    );
  });

  it('cites known passages on their exact 1-based PDF pages (physical pages, not printed page labels)', async () => {
    const cases = [
      // OSHA2001.pdf page 25 is printed "- 23 -".
      {
        file: 'pdf/OSHA2001.pdf',
        question: 'Who appoints the Director who heads the Institute, and for what term does the Director serve?',
        quote: /headed by a Director/,
        page: 25,
      },
      { file: 'pdf/debian-policy-4.6.2.0.pdf', question: 'What are the permissions on /var/games?', quote: /\/var\/games are mode 755/, page: 120 },
    ];
    for (const c of cases) {
      const page = execFileSync('pdftotext', ['-f', String(c.page), '-l', String(c.page), corpusFile(c.file), '-'], { encoding: 'utf8' });
      expect(page.replace(/\s+/g, ' ')).toMatch(c.quote);
      const res = await a.post('/api/v2/agent/query').send({ question: c.question, document_ids: [ids.get(c.file)], top_k: 5 });
      expect(res.status).toBe(200);
      const cited = res.body.data.citations.find((x: any) => c.quote.test(x.quote.replace(/\s+/g, ' ')));
      expect({ file: c.file, cited: cited && { start_page: cited.start_page, end_page: cited.end_page } }).toEqual({
        file: c.file,
        cited: { start_page: c.page, end_page: c.page },
      });
    }
  });

  it('numbers XLSX pages by sheet and PDF chunks by page, with the section path kept', async () => {
    const sheet2 = await chunksMatching(ids.get('xlsx/fedramp_tailored_AppA_Security_Controls_Baseline.xlsx')!, 'Account Management');
    expect(sheet2.length).toBeGreaterThan(0);
    for (const c of sheet2) expect(c.startPage).toBeGreaterThanOrEqual(2);
    const policy = await chunksMatching(ids.get('pdf/debian-policy-4.6.2.0.pdf')!, 'permissions /var/games mode 755 owner root');
    const games = policy.find((c) => /\/var\/games are mode 755/.test(c.text.replace(/\s+/g, ' ')))!;
    expect({ start: games.startPage, end: games.endPage }).toEqual({ start: 120, end: 120 });
    expect(games.headingPath.join(' / ')).toMatch(/Games/);
  });

  it('repeats the header row in every chunk of a table (XLSX, CSV, DOCX)', async () => {
    const cases = [
      {
        file: 'xlsx/fedramp_tailored_AppA_Security_Controls_Baseline.xlsx',
        query: 'Access Control Policy and Procedures Account Management Audit Events Identification Authentication',
        header: /^No \| Control ID \| Control Name \| Tailoring Action \| Additional (?:Control )?Tailoring Comments$/m,
        min: 3,
        // The control tables are sheets 2 and 3 (sheet 1 is the key, with its own table).
        fromPage: 2,
      },
      {
        file: 'csv/osha_fatality_catastrophe_events_2013-06-15.csv',
        query: 'fell killed struck electrocuted',
        header: /^Summary Nr \| Event Date \| SIC \| .*\| Fat \| Event Description \| Report ID$/m,
        min: 10,
      },
      { file: 'docx/fedramp_oscal_Overview.docx', query: 'XML Equivalent JSON Equivalent', header: /^Term \| XML Equivalent \| JSON Equivalent$/m, min: 1 },
    ];
    for (const c of cases) {
      const table = (await chunksMatching(ids.get(c.file)!, c.query)).filter(
        (ch) => (ch.startPage ?? 0) >= (c.fromPage ?? 0) && ch.text.split('\n').filter((l) => l.includes(' | ')).length >= 2,
      );
      expect({ file: c.file, enough: table.length >= c.min }).toEqual({ file: c.file, enough: true });
      for (const ch of table)
        expect({ file: c.file, chunk: ch.chunkIndex, header: c.header.test(ch.text) }).toEqual({ file: c.file, chunk: ch.chunkIndex, header: true });
    }
    // Rows are never split: every table line of a CSV chunk has all 7 cells.
    const csv = await chunksMatching(ids.get('csv/osha_fatality_catastrophe_events_2013-06-15.csv')!, 'fell');
    for (const ch of csv) for (const line of ch.text.split('\n').filter((l) => l.includes(' | '))) expect(line.split(' | ')).toHaveLength(7);
  });

  it('makes an ODT searchable with its sections, table header and footnote (parsed in the worker thread)', async () => {
    const id = ids.get('heat-illness-plan.odt')!;
    const duty = (await chunksMatching(id, 'Supervisor checks heat index each hour')).find((c) =>
      c.text.includes('Supervisor | Checks the heat index each hour.'),
    )!;
    expect(duty.text).toMatch(/^Role \| Duty$/m);
    expect(duty.headingPath).toEqual(expect.arrayContaining(['Responsibilities']));
    expect(duty.startPage ?? null).toBeNull();
    const note = await chunksMatching(id, 'National Weather Service');
    expect(note.map((c) => c.text).join('\n')).toMatch(/Heat index as published by the National Weather Service\./);
  });

  it('OCRs the scanned Linn brochure with 90%+ word overlap against its ground truth, on page 1', async () => {
    const id = ids.get('pdf_scanned/ocrmypdf_linn.pdf')!;
    const truth = readFileSync(corpusFile('pdf_scanned/ocrmypdf_linn.groundtruth.txt'), 'utf8');
    const chunks = await chunksMatching(id, truth.replace(/[^A-Za-z0-9 ]+/g, ' ').slice(0, 380));
    expect(chunks.length).toBe(docs.get('pdf_scanned/ocrmypdf_linn.pdf').chunk_count);
    // Rebuild the page text: consecutive chunks share an overlap, drop the repeated prefix.
    let text = '';
    for (const c of chunks) {
      let k = Math.min(text.length, c.text.length);
      while (k > 0 && !text.endsWith(c.text.slice(0, k))) k--;
      text += (text ? '\n' : '') + c.text.slice(k);
      expect({ start: c.startPage, end: c.endPage }).toEqual({ start: 1, end: 1 });
    }
    expect(wordOverlap(truth, text)).toBeGreaterThanOrEqual(0.9);
  });
});
