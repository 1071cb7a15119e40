/** Checks shared by the Office Open XML formats (DOCX, XLSX, PPTX), which are ZIP packages. */
import { readFile } from 'node:fs/promises';
import { ExtractionError } from './types';
import { checkZipLimits, DEFAULT_ZIP_LIMITS, verifyInflatedSizes, ZipLimits } from './zip-limits';

const OLE_MAGIC = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1];

/**
 * Reads an Office Open XML file and verifies it is a ZIP package. Throws `ENCRYPTED` for
 * password-protected Office files (an OLE container holding an `EncryptedPackage`),
 * `UNSUPPORTED_TYPE` for legacy binary Office files (.doc/.xls/.ppt) and `CORRUPT_FILE` for
 * anything else that is not a ZIP. `label` names the format in messages ("Word document").
 * Before anything is inflated, the declared sizes are checked against `limits` (zip bombs ->
 * `TOO_LARGE`, see {@link checkZipLimits}), then each part is inflated as a counting stream to
 * verify it holds no more than declared ({@link verifyInflatedSizes}: headers that lie -> `TOO_LARGE`).
 */
export async function readOfficePackage(filePath: string, label: string, extension: string, limits: ZipLimits = DEFAULT_ZIP_LIMITS): Promise<Buffer> {
  const bytes = await readFile(filePath);
  if (bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04) {
    const entries = checkZipLimits(bytes, label, extension, limits);
    await verifyInflatedSizes(bytes, entries, label, extension);
    return bytes;
  }
  if (bytes.length >= 8 && OLE_MAGIC.every((b, i) => bytes[i] === b)) {
    if (bytes.includes(Buffer.from('EncryptedPackage', 'utf16le'))) {
      throw new ExtractionError('ENCRYPTED', `The ${label} is password-protected; upload a copy without a password.`);
    }
    throw new ExtractionError(
      'UNSUPPORTED_TYPE',
      `The ${label} is in the old binary Office format (97-2003); open it and save it as .${extension}, then upload that.`,
    );
  }
  throw new ExtractionError('CORRUPT_FILE', `The ${label} could not be read; it may be damaged or not a .${extension} file. Save a new copy and upload that.`);
}
