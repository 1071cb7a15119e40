import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import JSZip from 'jszip';
import { extractDocument, ExtractionError } from './index';
import { corpus } from './testing/corpus';

// Each extraction starts a worker thread that compiles and loads the extractor: seconds on a loaded 2-core machine.
jest.setTimeout(60_000);

const ODT = 'application/vnd.oasis.opendocument.text';
/**
 * A real ODT written by pandoc 2.17 (`pandoc heat-illness-plan.md -o heat-illness-plan.odt`, from
 * Markdown with a title, three heading levels, a footnote, a nested list, a table and a line break).
 */
const FIXTURE = path.join(__dirname, 'testing/heat-illness-plan.odt');

describe('ODT extraction (officeparser)', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(path.join(tmpdir(), 'kb-odt-spec-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('keeps headings with their levels, paragraphs with their footnotes, list items and tables (header = first row)', async () => {
    const doc = await extractDocument(FIXTURE, ODT);
    expect(doc.pageCount).toBeNull();
    expect(doc.title).toBe('Heat Illness Prevention Plan');
    expect(doc.blocks).toEqual([
      { kind: 'heading', text: 'Heat Illness Prevention Plan', page: null, level: 1 },
      { kind: 'heading', text: 'Heat Illness Prevention', page: null, level: 1 },
      { kind: 'paragraph', text: 'Workers must drink water every fifteen minutes when the heat index exceeds 90 °F.', page: null },
      { kind: 'paragraph', text: 'Heat index as published by the National Weather Service.', page: null },
      { kind: 'heading', text: 'Rest breaks', page: null, level: 2 },
      { kind: 'list', text: 'Shade is provided at every site.', page: null },
      { kind: 'list', text: 'Breaks last at least ten minutes.', page: null },
      { kind: 'list', text: 'Longer breaks above 100 °F.', page: null },
      { kind: 'heading', text: 'Responsibilities', page: null, level: 2 },
      {
        kind: 'table',
        text: 'Role | Duty\nSupervisor | Checks the heat index each hour.\nWorker | Reports symptoms of heat illness.',
        page: null,
        tableHeader: 'Role | Duty',
      },
      { kind: 'heading', text: 'First aid', page: null, level: 3 },
      { kind: 'paragraph', text: 'Move the person to a cool place\nand call for help.', page: null },
    ]);
  });

  it('rejects a file that is not a ZIP package as CORRUPT_FILE', async () => {
    const file = path.join(tmp, 'notes.odt');
    writeFileSync(file, 'just some text, not an OpenDocument file');
    const error = (await extractDocument(file, ODT).catch((e: unknown) => e)) as ExtractionError;
    expect(error).toBeInstanceOf(ExtractionError);
    expect(error.code).toBe('CORRUPT_FILE');
    expect(error.message).toBe('The OpenDocument text could not be read; it may be damaged or not a .odt file. Save a new copy and upload that.');
  });

  it('rejects a damaged package (a truncated ODT) and a ZIP without content.xml (a Word file named .odt) as CORRUPT_FILE', async () => {
    const bytes = readFileSync(FIXTURE);
    const truncated = path.join(tmp, 'truncated.odt');
    writeFileSync(truncated, bytes.subarray(0, Math.floor(bytes.length / 2)));
    expect(((await extractDocument(truncated, ODT).catch((e: unknown) => e)) as ExtractionError).code).toBe('CORRUPT_FILE');
    const docx = (await extractDocument(corpus('docx/fedramp_oscal_Overview.docx'), ODT).catch((e: unknown) => e)) as ExtractionError;
    expect(docx.code).toBe('CORRUPT_FILE');
  });

  it('refuses a document without text as NO_TEXT, naming the format', async () => {
    // The fixture with its body emptied: the package stays a valid ODT.
    const zip = await JSZip.loadAsync(readFileSync(FIXTURE));
    const content = (await zip.file('content.xml')!.async('string')).replace(/<office:text>[\s\S]*<\/office:text>/, '<office:text/>');
    zip.file('content.xml', content);
    const file = path.join(tmp, 'empty.odt');
    writeFileSync(file, await zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' }));
    const error = (await extractDocument(file, ODT).catch((e: unknown) => e)) as ExtractionError;
    expect(error.code).toBe('NO_TEXT');
    expect(error.message).toBe('The OpenDocument text contains no text; upload a document with content.');
  });
});
