/**
 * Large and hostile Office/HTML files built at test time (never committed as blobs), for the
 * off-thread extraction tests and `tools/bench/extraction-loop.mjs`. Real formats: the DOCX is a
 * minimal WordprocessingML package (ECMA-376 Part 1, 17.2/17.3) that mammoth reads like Word's own,
 * the XLSX is written by exceljs's streaming writer, the HTML is plain HTML5.
 */
import ExcelJS from 'exceljs';
import JSZip from 'jszip';
import { writeFile } from 'node:fs/promises';
import { deflateRawSync } from 'node:zlib';

const WORDS =
  'crane scaffold harness guardrail ladder trench excavation welding ventilation respirator hoist rigging forklift signage lockout tagout permit audit'.split(
    ' ',
  );

/** A sentence of `n` words drawn deterministically from a small safety vocabulary. */
function sentence(seed: number, n = 14): string {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(WORDS[(seed * 7 + i * 13) % WORDS.length]);
  return `${out.join(' ')} ${seed}.`;
}

const CONTENT_TYPES =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
  '<Default Extension="xml" ContentType="application/xml"/>' +
  '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>' +
  '</Types>';
const ROOT_RELS =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
  '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>' +
  '</Relationships>';
const W_NS = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"';

/** WordprocessingML body of `paragraphs` paragraphs of `words` words, a "Heading1" paragraph every 50. */
function documentXml(paragraphs: number, words: number): string {
  const parts: string[] = [`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document ${W_NS}><w:body>`];
  for (let i = 0; i < paragraphs; i++) {
    if (i % 50 === 0) parts.push(`<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Section ${i / 50 + 1}</w:t></w:r></w:p>`);
    parts.push(`<w:p><w:r><w:t>${sentence(i, words)}</w:t></w:r></w:p>`);
  }
  parts.push('</w:body></w:document>');
  return parts.join('');
}

/**
 * Writes a DOCX of `paragraphs` body paragraphs of `words` words each (plus a heading every 50) to
 * `file`. Parsing cost grows with the paragraphs, the indexing cost (chunks to embed) with the text.
 */
export async function writeLargeDocx(file: string, paragraphs: number, words = 14): Promise<void> {
  const zip = new JSZip();
  zip.file('[Content_Types].xml', CONTENT_TYPES);
  zip.file('_rels/.rels', ROOT_RELS);
  zip.file('word/document.xml', documentXml(paragraphs, words));
  await writeFile(file, await zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' }));
}

/** Writes an XLSX with one sheet of `rows` x `cols` cells (a header row, then text and numbers). */
export async function writeLargeXlsx(file: string, rows: number, cols: number): Promise<void> {
  const wb = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: file, useSharedStrings: false, useStyles: false });
  const ws = wb.addWorksheet('Inspections');
  ws.addRow(Array.from({ length: cols }, (_, c) => `Column ${c + 1}`)).commit();
  for (let r = 0; r < rows - 1; r++) {
    ws.addRow(Array.from({ length: cols }, (_, c) => (c % 2 === 0 ? WORDS[(r + c) % WORDS.length] : r * cols + c))).commit();
  }
  ws.commit();
  await wb.commit();
}

/** Writes an HTML page of about `bytes` bytes: sections of headings, paragraphs and list items. */
export async function writeLargeHtml(file: string, bytes: number): Promise<void> {
  const parts: string[] = ['<!doctype html><html><head><title>Site safety manual</title></head><body><main>'];
  let size = parts[0].length;
  for (let i = 0; size < bytes; i++) {
    const s =
      i % 40 === 0
        ? `<h2>Section ${i / 40 + 1}</h2>`
        : i % 7 === 0
          ? `<ul><li>${sentence(i, 6)}</li><li>${sentence(i + 1, 6)}</li></ul>`
          : `<p>${sentence(i)}</p>`;
    parts.push(s);
    size += s.length;
  }
  parts.push('</main></body></html>');
  await writeFile(file, parts.join(''));
}

/**
 * Writes a "lying" zip bomb shaped as a DOCX: its `word/document.xml` part inflates to
 * `inflatedBytes` of repeated paragraph XML while the ZIP headers (local and central) declare
 * `declaredBytes`, so a guard that only reads the declared sizes lets it through. Written by hand
 * after PKWARE APPNOTE 6.3.x (4.3.7 local file header, 4.3.12 central directory header, 4.3.16
 * end of central directory). The CRC field is left 0 (JSZip does not verify it by default).
 */
export async function writeLyingZipBomb(file: string, inflatedBytes: number, declaredBytes = 4096): Promise<void> {
  const unit = Buffer.from('<w:p><w:r><w:t>bomb</w:t></w:r></w:p>'.repeat(1000));
  const body = Buffer.alloc(inflatedBytes);
  for (let off = 0; off < inflatedBytes; off += unit.length) unit.copy(body, off, 0, Math.min(unit.length, inflatedBytes - off));
  const entries: { name: string; data: Buffer; size: number; method: number }[] = [
    { name: '[Content_Types].xml', data: Buffer.from(CONTENT_TYPES), size: CONTENT_TYPES.length, method: 0 },
    { name: '_rels/.rels', data: Buffer.from(ROOT_RELS), size: ROOT_RELS.length, method: 0 },
    { name: 'word/document.xml', data: deflateRawSync(body, { level: 9 }), size: declaredBytes, method: 8 },
  ];
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(e.method, 8);
    local.writeUInt32LE(e.data.length, 18);
    local.writeUInt32LE(e.size, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4); // version made by
    // "version needed" through "extra field length": the local header's fields 4-29, in the same order.
    local.copy(central, 6, 4, 30);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, e.data);
    centrals.push(central, name);
    offset += 30 + name.length + e.data.length;
  }
  const directory = Buffer.concat(centrals);
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  eocd.writeUInt16LE(entries.length, 8);
  eocd.writeUInt16LE(entries.length, 10);
  eocd.writeUInt32LE(directory.length, 12);
  eocd.writeUInt32LE(offset, 16);
  await writeFile(file, Buffer.concat([...locals, directory, eocd]));
}
