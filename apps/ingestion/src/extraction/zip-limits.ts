/**
 * Zip-bomb guard for Office Open XML packages (DOCX, XLSX, PPTX are ZIP files): reads the
 * declared sizes of every entry from the ZIP central directory, without inflating anything, and
 * rejects packages that would expand beyond a total budget or at an implausible ratio.
 *
 * Layout from PKWARE APPNOTE.TXT 6.3.x: end of central directory record (4.3.16, signature
 * 0x06054b50), central directory file headers (4.3.12, signature 0x02014b50), Zip64 end of central
 * directory locator/record (4.3.15/4.3.14) and Zip64 extended information extra field (4.5.3, id 0x0001).
 */
import { createInflateRaw } from 'node:zlib';
import { ExtractionError } from './types';

/**
 * One entry as declared in the central directory: sizes in bytes, `method` the compression method
 * (0 stored, 8 deflate; APPNOTE 4.4.5) and `localHeaderOffset` where its local file header starts.
 */
export interface ZipEntryInfo {
  name: string;
  compressedSize: number;
  uncompressedSize: number;
  method: number;
  localHeaderOffset: number;
}

/** Limits: `maxUncompressedBytes` for the whole package; `maxRatio` for an entry bigger than `ratioFloorBytes`. */
export interface ZipLimits {
  maxUncompressedBytes: number;
  maxRatio: number;
  ratioFloorBytes: number;
}

/**
 * Defaults: 1 GiB expanded in total; no entry over 1 MiB may expand more than 200:1 (real Office XML
 * compresses about 5-30:1; classic bombs such as 42.zip run at 1000:1 and more).
 */
export const DEFAULT_ZIP_LIMITS: ZipLimits = { maxUncompressedBytes: 1024 * 1024 * 1024, maxRatio: 200, ratioFloorBytes: 1024 * 1024 };

const EOCD_SIG = 0x06054b50;
const ZIP64_LOCATOR_SIG = 0x07064b50;
const ZIP64_EOCD_SIG = 0x06064b50;
const CDH_SIG = 0x02014b50;

function corrupt(label: string, extension: string): ExtractionError {
  return new ExtractionError('CORRUPT_FILE', `The ${label} could not be read; it may be damaged or not a .${extension} file. Save a new copy and upload that.`);
}

/**
 * Lists the entries of the ZIP in `bytes` from its central directory. Returns null when no valid
 * central directory is found (the caller reports a corrupt file).
 */
export function readZipDirectory(bytes: Buffer): ZipEntryInfo[] | null {
  const minEocd = 22;
  if (bytes.length < minEocd) return null;
  let eocd = -1;
  for (let i = bytes.length - minEocd; i >= Math.max(0, bytes.length - minEocd - 0xffff); i--) {
    if (bytes.readUInt32LE(i) === EOCD_SIG) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) return null;
  let count = bytes.readUInt16LE(eocd + 10);
  let offset = bytes.readUInt32LE(eocd + 16);
  const locator = eocd - 20;
  if ((count === 0xffff || offset === 0xffffffff) && locator >= 0 && bytes.readUInt32LE(locator) === ZIP64_LOCATOR_SIG) {
    const rec = Number(bytes.readBigUInt64LE(locator + 8));
    if (rec + 56 > bytes.length || bytes.readUInt32LE(rec) !== ZIP64_EOCD_SIG) return null;
    count = Number(bytes.readBigUInt64LE(rec + 32));
    offset = Number(bytes.readBigUInt64LE(rec + 48));
  }
  const entries: ZipEntryInfo[] = [];
  let p = offset;
  for (let n = 0; n < count; n++) {
    if (p + 46 > bytes.length || bytes.readUInt32LE(p) !== CDH_SIG) return null;
    const method = bytes.readUInt16LE(p + 10);
    let compressedSize = bytes.readUInt32LE(p + 20);
    let uncompressedSize = bytes.readUInt32LE(p + 24);
    let localHeaderOffset = bytes.readUInt32LE(p + 42);
    const nameLen = bytes.readUInt16LE(p + 28);
    const extraLen = bytes.readUInt16LE(p + 30);
    const commentLen = bytes.readUInt16LE(p + 32);
    if (p + 46 + nameLen + extraLen > bytes.length) return null;
    const name = bytes.toString('utf8', p + 46, p + 46 + nameLen);
    if (uncompressedSize === 0xffffffff || compressedSize === 0xffffffff || localHeaderOffset === 0xffffffff) {
      // Zip64 extra field: the 8-byte sizes present are those whose 32-bit field is 0xFFFFFFFF, uncompressed first.
      let q = p + 46 + nameLen;
      const end = q + extraLen;
      while (q + 4 <= end) {
        const id = bytes.readUInt16LE(q);
        const size = bytes.readUInt16LE(q + 2);
        if (id === 0x0001) {
          let f = q + 4;
          if (uncompressedSize === 0xffffffff && f + 8 <= q + 4 + size) {
            uncompressedSize = Number(bytes.readBigUInt64LE(f));
            f += 8;
          }
          if (compressedSize === 0xffffffff && f + 8 <= q + 4 + size) {
            compressedSize = Number(bytes.readBigUInt64LE(f));
            f += 8;
          }
          if (localHeaderOffset === 0xffffffff && f + 8 <= q + 4 + size) localHeaderOffset = Number(bytes.readBigUInt64LE(f));
          break;
        }
        q += 4 + size;
      }
    }
    entries.push({ name, compressedSize, uncompressedSize, method, localHeaderOffset });
    p += 46 + nameLen + extraLen + commentLen;
  }
  return entries;
}

/**
 * Throws `TOO_LARGE` when the package would expand beyond `limits` (a zip bomb), `CORRUPT_FILE`
 * when its central directory cannot be read. `label`/`extension` name the format in messages.
 */
export function checkZipLimits(bytes: Buffer, label: string, extension: string, limits: ZipLimits = DEFAULT_ZIP_LIMITS): ZipEntryInfo[] {
  const entries = readZipDirectory(bytes);
  if (!entries) throw corrupt(label, extension);
  let total = 0;
  for (const e of entries) {
    total += e.uncompressedSize;
    const ratio = e.uncompressedSize / Math.max(1, e.compressedSize);
    if (e.uncompressedSize > limits.ratioFloorBytes && ratio > limits.maxRatio) {
      throw new ExtractionError(
        'TOO_LARGE',
        `The ${label} was rejected as a possible zip bomb: its part "${e.name}" would expand ${Math.round(ratio)} times ` +
          `(to ${Math.round(e.uncompressedSize / (1024 * 1024))} MB). Save a new copy from your office application and upload that.`,
      );
    }
  }
  if (total > limits.maxUncompressedBytes) {
    throw new ExtractionError(
      'TOO_LARGE',
      `The ${label} was rejected: it would expand to ${Math.round(total / (1024 * 1024))} MB, more than the limit of ` +
        `${Math.round(limits.maxUncompressedBytes / (1024 * 1024))} MB. Split it into smaller files and upload them separately.`,
    );
  }
  return entries;
}

/** Inflated size of one deflated entry, counted while streaming; stops (and returns `cap + 1`) past `cap` bytes. */
function inflatedSize(data: Buffer, cap: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const inflate = createInflateRaw({ chunkSize: 64 * 1024 });
    let total = 0;
    inflate.on('data', (chunk: Buffer) => {
      total += chunk.length;
      if (total > cap) {
        inflate.destroy();
        resolve(cap + 1);
      }
    });
    inflate.on('end', () => resolve(total));
    inflate.on('error', reject);
    inflate.end(data);
  });
}

/**
 * Verifies that every deflated entry of the package in `bytes` inflates to no more than the
 * size its central directory declares (the sizes {@link checkZipLimits} budgeted), by inflating
 * it as a stream and counting, holding one 64 KiB chunk at a time. A package that lies about its
 * sizes (a "zip bomb" whose headers declare kilobytes for gigabytes) is rejected with `TOO_LARGE`
 * before any parser (JSZip inside mammoth/exceljs) inflates it into memory; a deflate stream that
 * does not decode gives `CORRUPT_FILE`. Costs one extra inflate pass (zlib runs at hundreds of
 * MB/s, small next to XML parsing).
 */
export async function verifyInflatedSizes(bytes: Buffer, entries: readonly ZipEntryInfo[], label: string, extension: string): Promise<void> {
  for (const e of entries) {
    if (e.method !== 8) continue; // stored (0): its size is its compressed size; others JSZip refuses (CORRUPT_FILE)
    const local = e.localHeaderOffset;
    if (local + 30 > bytes.length || bytes.readUInt32LE(local) !== 0x04034b50) throw corrupt(label, extension);
    const start = local + 30 + bytes.readUInt16LE(local + 26) + bytes.readUInt16LE(local + 28);
    if (start + e.compressedSize > bytes.length) throw corrupt(label, extension);
    let size: number;
    try {
      size = await inflatedSize(bytes.subarray(start, start + e.compressedSize), e.uncompressedSize);
    } catch {
      throw corrupt(label, extension);
    }
    if (size > e.uncompressedSize) {
      throw new ExtractionError(
        'TOO_LARGE',
        `The ${label} was rejected as a possible zip bomb: its part "${e.name}" inflates to more than the ${e.uncompressedSize} bytes ` +
          'its header declares. Save a new copy from your office application and upload that.',
      );
    }
  }
}
