import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import JSZip from 'jszip';
import { extractDocument, ExtractionError } from './index';
import { corpus } from './testing/corpus';
import { useTempDir } from './testing/temp-dir';

// Each extraction starts a worker thread that compiles and loads the extractor: seconds on a loaded 2-core machine.
jest.setTimeout(60_000);

const ODT = 'application/vnd.oasis.opendocument.text';
/**
 * A real ODT written by pandoc 2.17 (`pandoc heat-illness-plan.md -o heat-illness-plan.odt`, from
 * Markdown with a title, three heading levels, a footnote, a nested list, a table and a line break).
 */
const FIXTURE = path.join(__dirname, 'testing/heat-illness-plan.odt');

const NS =
  'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" ' +
  'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" ' +
  'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:xlink="http://www.w3.org/1999/xlink" ' +
  'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"';

/** A minimal ODT package (mimetype, manifest, content.xml with `body` inside office:text and `automaticStyles`, optional meta.xml). */
async function buildOdt(body: string, options: { automaticStyles?: string; meta?: string; manifestEntries?: string } = {}): Promise<Buffer> {
  const zip = new JSZip();
  zip.file('mimetype', ODT, { compression: 'STORE' });
  zip.file(
    'META-INF/manifest.xml',
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
      '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">' +
      `<manifest:file-entry manifest:full-path="/" manifest:media-type="${ODT}"/>` +
      (options.manifestEntries ?? '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>') +
      '</manifest:manifest>',
  );
  zip.file(
    'content.xml',
    `<?xml version="1.0" encoding="UTF-8"?>\n<office:document-content ${NS} office:version="1.3">` +
      `<office:automatic-styles>${options.automaticStyles ?? ''}</office:automatic-styles>` +
      `<office:body><office:text>${body}</office:text></office:body></office:document-content>`,
  );
  if (options.meta)
    zip.file(
      'meta.xml',
      `<?xml version="1.0" encoding="UTF-8"?>\n<office:document-meta ${NS}><office:meta>${options.meta}</office:meta></office:document-meta>`,
    );
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
}

describe('ODT extraction (JSZip + cheerio)', () => {
  const tmp = useTempDir('kb-odt-spec-');

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

  it('reads spans, spaces, tabs, links and line breaks; leaves out comments, tracked deletions, hidden text, images and the table of contents', async () => {
    const file = tmp('inline.odt');
    writeFileSync(
      file,
      await buildOdt(
        '<text:table-of-content><text:index-body><text:p>Scope\t1</text:p></text:index-body></text:table-of-content>' +
          '<text:tracked-changes><text:changed-region text:id="c1"><text:deletion><text:p>Deleted wording.</text:p></text:deletion></text:changed-region></text:tracked-changes>' +
          '<text:p text:style-name="P1">Keep   <text:span text:style-name="T1">exits</text:span><text:s text:c="4"/>clear<text:tab/>at all times' +
          '<office:annotation><dc:creator>Ann</dc:creator><text:p>Check this with legal.</text:p></office:annotation>' +
          ' (see <text:a xlink:href="https://www.osha.gov/">OSHA</text:a>).<text:line-break/>Second line' +
          '<text:hidden-text text:condition="true" text:string-value="secret">secret</text:hidden-text>' +
          '<draw:frame draw:name="Image1"><draw:image xlink:href="Pictures/1.png"><svg:title>a photo</svg:title></draw:image></draw:frame></text:p>' +
          '<text:p text:style-name="P2">Site safety plan</text:p>' +
          '<text:p>Text box follows.<draw:frame draw:name="Frame1"><draw:text-box><text:p>Inside the box.</text:p></draw:text-box></draw:frame></text:p>',
        {
          automaticStyles:
            '<style:style style:name="P1" style:family="paragraph" style:parent-style-name="Standard"/>' +
            '<style:style style:name="P2" style:family="paragraph" style:parent-style-name="Title"/>',
          meta: '<dc:title>Property title</dc:title>',
        },
      ),
    );
    const doc = await extractDocument(file, ODT);
    expect(doc.blocks).toEqual([
      { kind: 'paragraph', text: 'Keep exits clear at all times (see OSHA).\nSecond line', page: null },
      { kind: 'heading', text: 'Site safety plan', page: null, level: 1 },
      { kind: 'paragraph', text: 'Text box follows.', page: null },
      { kind: 'paragraph', text: 'Inside the box.', page: null },
    ]);
    expect(doc.title).toBe('Site safety plan');
  });

  it('keeps merged cells aligned, puts notes cited in a table after it, reads a one-column table as paragraphs, and takes the title from meta.xml without a heading', async () => {
    const file = tmp('tables.odt');
    const cell = (text: string, extra = '') => `<table:table-cell><text:p>${text}</text:p>${extra}</table:table-cell>`;
    writeFileSync(
      file,
      await buildOdt(
        '<table:table table:name="T1"><table:table-column table:number-columns-repeated="3"/>' +
          `<table:table-header-rows><table:table-row>${cell('Hazard')}${cell('Control')}${cell('Owner')}</table:table-row></table:table-header-rows>` +
          `<table:table-row><table:table-cell table:number-columns-spanned="2"><text:p>Heat<text:note text:id="n1" text:note-class="endnote"><text:note-citation>i</text:note-citation><text:note-body><text:p>Above 90 °F.</text:p></text:note-body></text:note></text:p></table:table-cell><table:covered-table-cell/>${cell('Site lead')}</table:table-row>` +
          `<table:table-row>${cell('Noise')}${cell('<text:span>Ear</text:span> plugs', '<text:list><text:list-item><text:p>or muffs</text:p></text:list-item></text:list>')}${cell('')}</table:table-row>` +
          '</table:table>' +
          `<table:table table:name="Layout"><table:table-row>${cell('Laid out in a one-column table.')}</table:table-row></table:table>`,
        { meta: '<dc:title>Hazard register</dc:title>' },
      ),
    );
    const doc = await extractDocument(file, ODT);
    expect(doc.blocks).toEqual([
      {
        kind: 'table',
        text: 'Hazard | Control | Owner\nHeat |  | Site lead\nNoise | Ear plugs or muffs',
        page: null,
        tableHeader: 'Hazard | Control | Owner',
      },
      { kind: 'paragraph', text: 'Above 90 °F.', page: null },
      { kind: 'paragraph', text: 'Laid out in a one-column table.', page: null },
    ]);
    expect(doc.title).toBe('Hazard register');
  });

  it('rejects a password-protected ODT (its manifest lists encryption data) as ENCRYPTED', async () => {
    // What LibreOffice's manifest says for a document saved with a password: each encrypted part has
    // a manifest:encryption-data (ODF 1.3 part 2, 3.8), and content.xml holds ciphertext.
    const encryption =
      '<manifest:encryption-data manifest:checksum-type="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0#sha256-1k" manifest:checksum="AAAA">' +
      '<manifest:algorithm manifest:algorithm-name="http://www.w3.org/2001/04/xmlenc#aes256-cbc" manifest:initialisation-vector="AAAA"/>' +
      '<manifest:start-key-generation manifest:start-key-generation-name="http://www.w3.org/2000/09/xmldsig#sha256" manifest:key-size="32"/>' +
      '<manifest:key-derivation manifest:key-derivation-name="PBKDF2" manifest:key-size="32" manifest:iteration-count="100000" manifest:salt="AAAA"/>' +
      '</manifest:encryption-data>';
    const zip = await JSZip.loadAsync(
      await buildOdt('<text:p>x</text:p>', {
        manifestEntries: `<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml" manifest:size="2310">${encryption}</manifest:file-entry>`,
      }),
    );
    zip.file('content.xml', Buffer.from('9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08', 'hex'), { compression: 'STORE' });
    const file = tmp('encrypted.odt');
    writeFileSync(file, await zip.generateAsync({ type: 'nodebuffer' }));
    const error = (await extractDocument(file, ODT).catch((e: unknown) => e)) as ExtractionError;
    expect(error).toBeInstanceOf(ExtractionError);
    expect(error.code).toBe('ENCRYPTED');
    expect(error.message).toBe('The OpenDocument text is password-protected; upload a copy without a password.');
  });

  it('rejects a file that is not a ZIP package as CORRUPT_FILE', async () => {
    const file = tmp('notes.odt');
    writeFileSync(file, 'just some text, not an OpenDocument file');
    const error = (await extractDocument(file, ODT).catch((e: unknown) => e)) as ExtractionError;
    expect(error).toBeInstanceOf(ExtractionError);
    expect(error.code).toBe('CORRUPT_FILE');
    expect(error.message).toBe('The OpenDocument text could not be read; it may be damaged or not a .odt file. Save a new copy and upload that.');
  });

  it('rejects a damaged package (a truncated ODT) and a ZIP without content.xml (a Word file named .odt) as CORRUPT_FILE', async () => {
    const bytes = readFileSync(FIXTURE);
    const truncated = tmp('truncated.odt');
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
    const file = tmp('empty.odt');
    writeFileSync(file, await zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' }));
    const error = (await extractDocument(file, ODT).catch((e: unknown) => e)) as ExtractionError;
    expect(error.code).toBe('NO_TEXT');
    expect(error.message).toBe('The OpenDocument text contains no text; upload a document with content.');
  });
});
