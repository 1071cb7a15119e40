import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { ExtractedBlock, ExtractedDocument, extractDocument } from '../extraction';
import { corpus, pdfPageText } from '../extraction/testing/corpus';
import { Chunk, chunkDocument } from './index';

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

function doc(blocks: ExtractedBlock[]): ExtractedDocument {
  return { blocks, pageCount: null, title: null };
}
const h = (text: string, level: number, page: number | null = null): ExtractedBlock => ({ kind: 'heading', text, level, page });
const p = (text: string, page: number | null = null): ExtractedBlock => ({ kind: 'paragraph', text, page });

/** Page of character `offset` of a chunk, from its pageSpans. */
function pageAt(chunk: Chunk, offset: number): number | null {
  let page: number | null = null;
  for (const span of chunk.pageSpans) if (span.offset <= offset) page = span.page;
  return page;
}

/** Every occurrence of `quote` in the chunks, with the page its first character is on. */
function findQuote(chunks: Chunk[], quote: string): { chunk: number; page: number | null }[] {
  const out: { chunk: number; page: number | null }[] = [];
  for (const c of chunks) {
    for (let i = c.text.indexOf(quote); i !== -1; i = c.text.indexOf(quote, i + 1)) out.push({ chunk: c.index, page: pageAt(c, i) });
  }
  return out;
}

function expectWellFormed(chunks: Chunk[], maxChars = 2000): void {
  chunks.forEach((c, i) => {
    expect(c.index).toBe(i);
    expect(c.text.length).toBeGreaterThan(0);
    expect(c.text.length).toBeLessThanOrEqual(maxChars);
    if (c.pageSpans.length) {
      expect(c.pageSpans[0].offset).toBe(0);
      for (let k = 1; k < c.pageSpans.length; k++) expect(c.pageSpans[k].offset).toBeGreaterThan(c.pageSpans[k - 1].offset);
      expect(c.startPage).toBe(Math.min(...c.pageSpans.map((s) => s.page)));
      expect(c.endPage).toBe(Math.max(...c.pageSpans.map((s) => s.page)));
    }
  });
}

const sentence = (n: number, words = 14) =>
  `Sentence ${n} ${'about workplace safety rules'.repeat(1)} ${'and more words'.repeat(Math.max(1, Math.floor(words / 3)))}.`;

describe('chunkDocument: rules', () => {
  it('keeps headings out of the text and tracks the heading path by level', () => {
    const chunks = chunkDocument(
      doc([h('1 Scope', 1), p('Scope text.'), h('1.1 Terms', 2), p('Terms text.'), h('1.2 Roles', 2), p('Roles text.'), h('2 Duties', 1), p('Duties text.')]),
    );
    expect(chunks.map((c) => [c.headingPath, c.text])).toEqual([
      [['1 Scope'], 'Scope text.'],
      [['1 Scope', '1.1 Terms'], 'Terms text.'],
      [['1 Scope', '1.2 Roles'], 'Roles text.'],
      [['2 Duties'], 'Duties text.'],
    ]);
    expect(chunks.every((c) => c.startPage === null && c.endPage === null && c.pageSpans.length === 0)).toBe(true);
  });

  it('does not nest a numbered heading under a numbered section that is not its ancestor (Debian Policy 11.11 after a "5." list item)', () => {
    const chunks = chunkDocument(
      doc([
        h('11 Customized programs', 1),
        h('11.5 Web servers', 2),
        p('Web servers text.'),
        h('5. Providing httpd and/or httpd-cgi', 3),
        p('Provide the virtual package.'),
        h('11.11 Games', 2),
        p('The permissions on /var/games are mode 755.'),
      ]),
    );
    expect(chunks.map((c) => c.headingPath)).toEqual([
      ['11 Customized programs', '11.5 Web servers'],
      ['11 Customized programs', '11.5 Web servers', '5. Providing httpd and/or httpd-cgi'],
      ['11 Customized programs', '11.11 Games'],
    ]);
  });

  it('does not lose the text of headings without content of their own', () => {
    const chunks = chunkDocument(doc([h('Appendix A', 1), h('Appendix B', 1), p('B text.')]));
    expect(chunks).toHaveLength(1);
    expect(chunks[0].text).toBe('Appendix A\n\nB text.');
    expect(chunks[0].headingPath).toEqual(['Appendix B']);
    // a document of headings only (the near-empty DOCX) still gives one chunk
    expect(chunkDocument(doc([h('AwesomeCloud Incident Response Plan', 1)])).map((c) => c.text)).toEqual(['AwesomeCloud Incident Response Plan']);
  });

  it('packs paragraphs up to the target, joins blocks with a blank line and never exceeds maxChars', () => {
    const paras = Array.from({ length: 30 }, (_, i) => p(`${sentence(i)} ${sentence(i + 100)}`));
    const chunks = chunkDocument(doc(paras), { targetChars: 500, maxChars: 800, overlapChars: 0 });
    expectWellFormed(chunks, 800);
    expect(chunks.length).toBeGreaterThan(3);
    for (const c of chunks) {
      expect(c.text.length).toBeLessThanOrEqual(500);
      for (const part of c.text.split('\n\n')) expect(paras.map((b) => b.text)).toContain(part);
    }
  });

  it('cuts an overlong paragraph at sentence boundaries and repeats the last sentence as overlap within the section', () => {
    const sentences = Array.from({ length: 40 }, (_, i) => `Employers shall keep record number ${i} of each injury for five years.`);
    const chunks = chunkDocument(doc([h('Records', 1), p(sentences.join(' ')), h('Other', 1), p('Unrelated text.')]), {
      targetChars: 400,
      maxChars: 600,
      overlapChars: 120,
    });
    expectWellFormed(chunks, 600);
    const records = chunks.filter((c) => c.headingPath[0] === 'Records');
    expect(records.length).toBeGreaterThan(3);
    for (const c of records) expect(c.text).toMatch(/^Employers shall keep record number \d+ of each injury for five years\.( Employers.*\.)?$/);
    for (let i = 1; i < records.length; i++) {
      const prevSentences = records[i - 1].text.split(/(?<=\.) /);
      expect(records[i].text.startsWith(prevSentences[prevSentences.length - 1])).toBe(true);
    }
    // no overlap across a heading
    expect(chunks[chunks.length - 1].text).toBe('Unrelated text.');
  });

  it('cuts a sentence without punctuation at whitespace', () => {
    const words = Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ');
    const chunks = chunkDocument(doc([p(words)]), { targetChars: 300, maxChars: 400, overlapChars: 0 });
    expectWellFormed(chunks, 400);
    expect(chunks.map((c) => c.text).join(' ')).toBe(words);
  });

  it('splits tables only between rows and starts every table chunk with the header', () => {
    const header = 'Control ID | Control Name | Tailoring Action';
    const rows = Array.from({ length: 120 }, (_, i) => `AC-${i + 1} | Access control requirement number ${i + 1} | Document and Assess`);
    const table: ExtractedBlock = { kind: 'table', text: [header, ...rows].join('\n'), tableHeader: header, page: 4 };
    const chunks = chunkDocument(doc([p('Intro paragraph.', 4), table, p('After the table.', 5)]), { targetChars: 800, maxChars: 1000 });
    expectWellFormed(chunks, 1000);
    expect(chunks[0].text).toBe('Intro paragraph.');
    const tableChunks = chunks.filter((c) => c.text.includes(' | '));
    expect(tableChunks.length).toBeGreaterThan(3);
    const seen: string[] = [];
    for (const c of tableChunks) {
      const lines = c.text.split('\n\n')[0].split('\n');
      expect(lines[0]).toBe(header);
      for (const line of lines.slice(1)) expect(rows).toContain(line);
      seen.push(...lines.slice(1));
    }
    expect(seen).toEqual(rows);
    // prose after a table may share its last chunk, and its page is recorded
    const last = chunks[chunks.length - 1];
    expect(last.text.endsWith('\n\nAfter the table.')).toBe(true);
    expect(pageAt(last, last.text.length - 3)).toBe(5);
  });

  it('records exactly where each page starts in a chunk', () => {
    const chunks = chunkDocument({
      blocks: [p('Page one text.', 1), p('More on page one.', 1), p('Page two starts here.', 2), p('Page three.', 3)],
      pageCount: 3,
      title: null,
    });
    expect(chunks).toHaveLength(1);
    const c = chunks[0];
    expect(c.text).toBe('Page one text.\n\nMore on page one.\n\nPage two starts here.\n\nPage three.');
    expect(c.pageSpans).toEqual([
      { page: 1, offset: 0 },
      { page: 2, offset: c.text.indexOf('Page two') },
      { page: 3, offset: c.text.indexOf('Page three') },
    ]);
    expect([c.startPage, c.endPage]).toEqual([1, 3]);
  });

  it('is deterministic', () => {
    const blocks = Array.from({ length: 50 }, (_, i) =>
      i % 7 === 0 ? h(`Section ${i}`, 1 + (i % 3)) : p(`${sentence(i)} ${sentence(i * 3)}`, 1 + Math.floor(i / 5)),
    );
    expect(chunkDocument(doc(blocks))).toEqual(chunkDocument(doc(blocks)));
  });
});

describe('chunkDocument on real documents', () => {
  it('puts sentences of OSHA2001.pdf on the page pdftotext shows them on', async () => {
    const file = corpus('pdf/OSHA2001.pdf');
    const chunks = chunkDocument(await extractDocument(file, 'application/pdf'));
    expectWellFormed(chunks);
    const whole = execFileSync('pdftotext', ['-enc', 'UTF-8', file, '-']).toString('utf8');
    for (const page of [5, 12, 19, 27, 33]) {
      const lines = pdfPageText(file, page)
        .split('\n')
        .map((l) => l.replace(/\s+/g, ' ').trim())
        .filter((l) => l.length >= 50 && !l.endsWith('-') && whole.split(l).length === 2)
        .sort((a, b) => b.length - a.length || a.localeCompare(b));
      expect(lines.length).toBeGreaterThan(0);
      for (const quote of lines.slice(0, 3)) {
        const hits = findQuote(chunks, quote);
        expect({ quote, hits: hits.length }).toEqual({ quote, hits: expect.any(Number) });
        expect(hits.length).toBeGreaterThan(0);
        for (const hit of hits) expect({ quote, page: hit.page }).toEqual({ quote, page });
      }
    }
  });

  it('chunks the 193-page Debian Policy with section paths and page spans that match the pages', async () => {
    const file = corpus('pdf/debian-policy-4.6.2.0.pdf');
    const started = Date.now();
    const extracted = await extractDocument(file, 'application/pdf');
    const chunks = chunkDocument(extracted);

    console.log(`debian-policy-4.6.2.0.pdf: extract + chunk ${Date.now() - started} ms, ${chunks.length} chunks`);
    expectWellFormed(chunks);
    const section = chunks.find((c) => c.headingPath[c.headingPath.length - 1] === '4.2 Package relationships')!;
    expect(section.text).toMatch(/^Source packages should specify which binary packages they require/);
    expect(section.pageSpans).toEqual([{ page: 30, offset: 0 }]);
    expect(section.headingPath).toEqual(['SOURCE PACKAGES', '4.2 Package relationships']);

    // Every page span starts with text that poppler shows on that page.
    const pages = execFileSync('pdftotext', ['-enc', 'UTF-8', file, '-']).toString('utf8').split('\f');
    const squash = (s: string) => s.replace(/[\s.\u2026]+/g, '');
    let checked = 0;
    let multiPage = 0;
    for (const c of chunks) {
      if (c.pageSpans.length > 1) multiPage++;
      c.pageSpans.forEach((span, k) => {
        const end = k + 1 < c.pageSpans.length ? c.pageSpans[k + 1].offset : c.text.length;
        // the first block of the page in this chunk (headings between blocks are not chunk text)
        const sample = squash(c.text.slice(span.offset, Math.min(end, span.offset + 60)).split('\n\n')[0]);
        if (sample.length < 10) return;
        expect({ page: span.page, sample, found: squash(pages[span.page - 1]).includes(sample) }).toEqual({ page: span.page, sample, found: true });
        checked++;
      });
    }
    expect(checked).toBeGreaterThan(500);
    expect(multiPage).toBeGreaterThan(50);
  });

  it('repeats the CSV header at the top of every chunk and never cuts a row', async () => {
    const file = corpus('csv/osha_fatality_catastrophe_events_2013-06-15.csv');
    const chunks = chunkDocument(await extractDocument(file, 'text/csv'));
    expectWellFormed(chunks);
    const header = 'Summary Nr | Event Date | SIC |  | Fat | Event Description | Report ID';
    const rows = chunks.flatMap((c) => {
      const lines = c.text.split('\n');
      expect(lines[0]).toBe(header);
      return lines.slice(1);
    });
    const lines = readFileSync(file, 'utf8')
      .split(/\r?\n/)
      .filter((l) => l.trim());
    expect(rows).toHaveLength(lines.slice(1).filter((l) => l !== lines[0]).length);
    expect(rows.every((r) => /^\d+ \| \d\d\/\d\d\/\d{4} \|/.test(r))).toBe(true);
  });

  it('puts DOCX headings into the heading path of their chunks', async () => {
    const chunks = chunkDocument(await extractDocument(corpus('docx/fedramp_oscal_working_with.docx'), DOCX));
    expectWellFormed(chunks);
    const c = chunks.find((x) => x.text.includes('The resolved profile catalog for each FedRAMP baseline is a pre-processing'))!;
    expect(c.headingPath).toEqual(['Working with OSCAL Files', 'SSP File Concepts', 'Resolved Profile Catalogs']);
    expect(c.text).not.toContain('Resolved Profile Catalogs\n');
  });

  it('returns the words of the near-empty DOCX as one chunk', async () => {
    const chunks = chunkDocument(await extractDocument(corpus('docx/fedramp_AwesomeCloud-IRP_NEAR-EMPTY.docx'), DOCX));
    expect(chunks).toEqual([{ index: 0, text: 'AwesomeCloud Incident Response Plan', headingPath: [], startPage: null, endPage: null, pageSpans: [] }]);
  });
});
