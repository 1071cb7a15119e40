import JSZip from 'jszip';
import { readFileSync, writeFileSync } from 'node:fs';
import { extractDocument, ExtractionError } from './index';
import { corpus } from './testing/corpus';
import { checkZipLimits, readZipDirectory } from './zip-limits';
import { useTempDir } from './testing/temp-dir';

jest.setTimeout(60_000);

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

/** A DOCX-shaped package whose document part is `bytes` zeros (compresses about 1000:1). */
async function bomb(bytes: number): Promise<Buffer> {
  const zip = new JSZip();
  zip.file('[Content_Types].xml', '<Types/>');
  zip.file('word/document.xml', Buffer.alloc(bytes));
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
}

describe('zip-bomb guard for Office packages', () => {
  const dir = useTempDir('kb-zip-spec-');

  it('reads the declared sizes of a real DOCX without inflating it', () => {
    const entries = readZipDirectory(readFileSync(corpus('docx/fedramp_oscal_Overview.docx')))!;
    expect(entries.map((e) => e.name)).toContain('word/document.xml');
    const doc = entries.find((e) => e.name === 'word/document.xml')!;
    expect(doc.uncompressedSize).toBeGreaterThan(doc.compressedSize);
  });

  it('accepts every real DOCX and XLSX of the corpus', () => {
    for (const f of [
      'docx/fedramp_oscal_working_with.docx',
      'docx/fedramp_tailored_LI-SaaS_Requirements.docx',
      'xlsx/fedramp_OSCAL_Registry.xlsx',
      'xlsx/fedramp_tailored_AppA_Security_Controls_Baseline.xlsx',
    ]) {
      expect(() => checkZipLimits(readFileSync(corpus(f)), 'file', 'zip')).not.toThrow();
    }
  });

  it('rejects a package whose part expands 1000:1 before inflating it, with a clear message', async () => {
    const file = dir('bomb.docx');
    writeFileSync(file, await bomb(50 * 1024 * 1024));
    const error = await extractDocument(file, DOCX).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExtractionError);
    expect(error).toMatchObject({ code: 'TOO_LARGE' });
    expect((error as Error).message).toMatch(/possible zip bomb: its part "word\/document.xml" would expand \d+ times/);
  });

  it('rejects a package over the total uncompressed limit (maxUnzippedBytes)', async () => {
    const file = dir('big.xlsx');
    writeFileSync(file, readFileSync(corpus('xlsx/fedramp_tailored_AppA_Security_Controls_Baseline.xlsx')));
    const error = await extractDocument(file, XLSX, { maxUnzippedBytes: 100_000 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'TOO_LARGE' });
    expect((error as Error).message).toMatch(/would expand to \d+ MB, more than the limit/);
  });

  it('reports a truncated package (no central directory) as corrupt', async () => {
    const file = dir('cut.docx');
    writeFileSync(file, readFileSync(corpus('docx/fedramp_oscal_Overview.docx')).subarray(0, 5000));
    await expect(extractDocument(file, DOCX)).rejects.toMatchObject({ code: 'CORRUPT_FILE' });
  });
});
