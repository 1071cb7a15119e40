import { readFileSync, writeFileSync } from 'node:fs';
import { extractDocument, ExtractionError } from './index';
import { corpus } from './testing/corpus';
import { useTempDir } from './testing/temp-dir';

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

describe('DOCX extraction (mammoth)', () => {
  const tmp = useTempDir('kb-docx-spec-');

  it('keeps Word headings with their levels, paragraphs and tables (header = first row)', async () => {
    const doc = await extractDocument(corpus('docx/fedramp_oscal_Overview.docx'), DOCX);
    expect(doc.pageCount).toBeNull();
    expect(doc.title).toBe('Overview');
    expect(doc.blocks.filter((b) => b.kind === 'heading').map((b) => [b.level, b.text])).toEqual([
      [1, 'Overview'],
      [2, 'Who Should Use This Document?'],
      [2, 'Related Documents'],
      [2, 'Basic Terminology'],
    ]);
    const tables = doc.blocks.filter((b) => b.kind === 'table');
    expect(tables).toHaveLength(2);
    expect(tables[1]).toEqual({
      kind: 'table',
      page: null,
      tableHeader: 'Term | Meaning',
      text: [
        'Term | Meaning',
        'must | Indicates a required action.',
        'should | Indicates a recommended action, but not necessarily required.',
        'may | Indicates an optional action.',
      ].join('\n'),
    });
    expect(doc.blocks.every((b) => b.page === null)).toBe(true);
  });

  it('maps custom heading styles based on Word headings (GSA "Section" styles with numbering) to headings', async () => {
    const doc = await extractDocument(corpus('docx/fedramp_tailored_LI-SaaS_Requirements.docx'), DOCX);
    const headings = doc.blocks.filter((b) => b.kind === 'heading').map((b) => [b.level, b.text]);
    expect(headings).toEqual(
      expect.arrayContaining([
        [1, 'Purpose'],
        [1, 'Authority'],
        [2, 'NIST SP 800-37 Step 1 - Categorize Information System'],
      ]),
    );
  });

  it('returns the few words of a near-empty document instead of failing', async () => {
    const doc = await extractDocument(corpus('docx/fedramp_AwesomeCloud-IRP_NEAR-EMPTY.docx'), DOCX);
    expect(doc.blocks).toEqual([{ kind: 'heading', text: 'AwesomeCloud Incident Response Plan', page: null, level: 1 }]);
    expect(doc.title).toBe('AwesomeCloud Incident Response Plan');
  });

  it('rejects a file that is not a ZIP package as CORRUPT_FILE', async () => {
    const file = tmp('notes.docx');
    writeFileSync(file, 'just some text, not a Word document');
    const error = await extractDocument(file, DOCX).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExtractionError);
    expect((error as ExtractionError).code).toBe('CORRUPT_FILE');
  });

  it('rejects a damaged ZIP (a truncated corpus DOCX) as CORRUPT_FILE', async () => {
    const bytes = readFileSync(corpus('docx/fedramp_oscal_Overview.docx'));
    const file = tmp('truncated.docx');
    writeFileSync(file, bytes.subarray(0, Math.floor(bytes.length / 2)));
    const error = await extractDocument(file, DOCX).catch((e: unknown) => e);
    expect((error as ExtractionError).code).toBe('CORRUPT_FILE');
  });

  it('tells legacy .doc files and password-protected Office files apart (OLE containers)', async () => {
    const ole = Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);
    const legacy = tmp('legacy.docx');
    writeFileSync(legacy, Buffer.concat([ole, Buffer.alloc(512)]));
    const legacyError = (await extractDocument(legacy, DOCX).catch((e: unknown) => e)) as ExtractionError;
    expect(legacyError.code).toBe('UNSUPPORTED_TYPE');
    expect(legacyError.message).toMatch(/save it as \.docx/);

    const locked = tmp('locked.docx');
    writeFileSync(locked, Buffer.concat([ole, Buffer.alloc(64), Buffer.from('EncryptedPackage', 'utf16le'), Buffer.alloc(64)]));
    const lockedError = (await extractDocument(locked, DOCX).catch((e: unknown) => e)) as ExtractionError;
    expect(lockedError.code).toBe('ENCRYPTED');
  });
});
