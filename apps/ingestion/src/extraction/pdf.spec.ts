import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { extractDocument, ExtractionError } from './index';
import { corpus, hasTool } from './testing/corpus';
import { useTempDir } from './testing/temp-dir';

const PDF = 'application/pdf';

async function expectCode(promise: Promise<unknown>, code: string): Promise<ExtractionError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ExtractionError);
  expect((error as ExtractionError).code).toBe(code);
  return error as ExtractionError;
}

describe('PDF extraction (poppler)', () => {
  const tmp = useTempDir('kb-pdf-spec-');

  it('reads all 193 pages of the Debian Policy manual with exact page numbers, headings and no running headers', async () => {
    const started = Date.now();
    const doc = await extractDocument(corpus('pdf/debian-policy-4.6.2.0.pdf'), PDF);
    const elapsed = Date.now() - started;

    console.log(`debian-policy-4.6.2.0.pdf (193 pages): extracted in ${elapsed} ms, ${doc.blocks.length} blocks`);

    expect(doc.pageCount).toBe(193);
    expect(doc.title).toBe('Debian Policy Manual');
    expect(Math.max(...doc.blocks.map((b) => b.page ?? 0))).toBe(193);
    const heading = doc.blocks.find((b) => b.kind === 'heading' && b.text === '4.2 Package relationships');
    expect(heading).toMatchObject({ page: 30, level: 2 });
    expect(doc.blocks.find((b) => b.kind === 'heading' && b.text === '4.4 Debian changelog: debian/changelog')).toMatchObject({ page: 31, level: 2 });
    // The first body paragraph of 4.2 follows its heading, lines joined into one paragraph.
    const idx = doc.blocks.indexOf(heading!);
    expect(doc.blocks[idx + 1].text).toMatch(
      /^Source packages should specify which binary packages they require to be installed or not to be installed in order to build correctly\. For example,/,
    );
    // Running header and page-number footers are gone.
    expect(doc.blocks.some((b) => b.text.includes('Debian Policy Manual, Release 4.6.2.0'))).toBe(false);
    expect(doc.blocks.some((b) => b.page === 30 && b.text === '20')).toBe(false);
    expect(elapsed).toBeLessThan(15_000);
  });

  it('keeps bullet items as list blocks and footnote text out of headings', async () => {
    const doc = await extractDocument(corpus('pdf/debian-policy-4.6.2.0.pdf'), PDF);
    const page30 = doc.blocks.filter((b) => b.page === 30);
    expect(page30.filter((b) => b.kind === 'list').map((b) => b.text.slice(0, 38))).toEqual(
      expect.arrayContaining(['• This allows maintaining the list sep', '• Having a separate package allows one']),
    );
    expect(page30.filter((b) => b.kind === 'heading').map((b) => b.text)).toEqual(['4.2 Package relationships', '4.3 Changes to the upstream sources']);
  });

  it('recovers the SAR guide despite its broken xref table', async () => {
    const doc = await extractDocument(corpus('pdf/fedramp_guide_sar_rev5.pdf'), PDF);
    expect(doc.pageCount).toBe(57);
    expect(doc.blocks.find((b) => b.kind === 'heading' && b.text === '3.2. SAR File Concepts')).toMatchObject({ page: 8, level: 2 });
    expect(doc.blocks.some((b) => b.text.startsWith('Unlike the traditional MS Word-based SSP, SAP, and SAR, the OSCAL-based versions'))).toBe(true);
  });

  it('rejects random bytes named .pdf as CORRUPT_FILE with an actionable message', async () => {
    const file = tmp('random.pdf');
    writeFileSync(file, Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 256)));
    const error = await expectCode(extractDocument(file, PDF), 'CORRUPT_FILE');
    expect(error.message).toMatch(/could not be read.*upload/i);
  });

  const withQpdf = hasTool('qpdf') ? it : it.skip;
  withQpdf('rejects a password-protected PDF as ENCRYPTED (qpdf-encrypted copy of a corpus PDF)', async () => {
    const file = tmp('locked.pdf');
    execFileSync('qpdf', ['--encrypt', 'user-secret', 'owner-secret', '256', '--', corpus('pdf/dol_osha-101_injury_illness_incident_report.pdf'), file]);
    const error = await expectCode(extractDocument(file, PDF), 'ENCRYPTED');
    expect(error.message).toBe('The PDF is password-protected; upload a copy without a password.');
  });

  withQpdf('reads a PDF that is encrypted with an owner password only (it opens without a password)', async () => {
    const file = tmp('owner-only.pdf');
    execFileSync('qpdf', ['--encrypt', '', 'owner-secret', '256', '--', corpus('pdf/dol_osha-101_injury_illness_incident_report.pdf'), file]);
    const doc = await extractDocument(file, PDF);
    expect(doc.pageCount).toBe(2);
    expect(doc.blocks.map((b) => b.text).join(' ')).toContain('Occupational Safety and Health Administration');
  });

  it('rejects documents with more pages than maxPages as TOO_LARGE', async () => {
    const error = await expectCode(extractDocument(corpus('pdf/debian-policy-4.6.2.0.pdf'), PDF, { maxPages: 100 }), 'TOO_LARGE');
    expect(error.message).toContain('193 pages');
  });

  it('stops with TIMEOUT when the time budget runs out', async () => {
    await expectCode(extractDocument(corpus('pdf/debian-policy-4.6.2.0.pdf'), PDF, { timeoutMs: 5 }), 'TIMEOUT');
  });

  it("passes on the caller's abort reason", async () => {
    const controller = new AbortController();
    const reason = new Error('upload deleted');
    const pending = extractDocument(corpus('pdf/debian-policy-4.6.2.0.pdf'), PDF, { signal: controller.signal });
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });

  it('says a scanned PDF has no text layer when OCR is off', async () => {
    const error = await expectCode(extractDocument(corpus('pdf_scanned/ocrmypdf_linn.pdf'), PDF, { ocr: false }), 'NO_TEXT');
    expect(error.message).toMatch(/scanned images/);
  });
});
