/**
 * Decoding of text files (TXT, CSV, Markdown, HTML, JSON) whose encoding is not declared:
 * byte-order marks first, then strict UTF-8, then Windows-1252 (a superset of Latin-1).
 */
import { readFile } from 'node:fs/promises';

/** Windows-1252 characters of bytes 0x80..0x9F (where it differs from Latin-1); undefined bytes stay as is. */
const CP1252_HIGH =
  '\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f' +
  '\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178';

/** Decodes Windows-1252 (Node's TextDecoder treats that label as Latin-1 on some versions). */
export function decodeWindows1252(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += 8192) {
    const chunk = bytes.subarray(i, i + 8192);
    out += String.fromCharCode(...Array.from(chunk, (b) => (b >= 0x80 && b <= 0x9f ? CP1252_HIGH.charCodeAt(b - 0x80) : b)));
  }
  return out;
}

/** Decodes bytes to a string: UTF-8/UTF-16 by BOM, else UTF-8 if valid, else Windows-1252. BOM removed. */
export function decodeText(bytes: Uint8Array): string {
  if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    return new TextDecoder('utf-8').decode(bytes.subarray(3));
  }
  if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe) return new TextDecoder('utf-16le').decode(bytes.subarray(2));
  if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff) return new TextDecoder('utf-16be').decode(bytes.subarray(2));
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return decodeWindows1252(bytes);
  }
}

/** Reads a file and decodes it with {@link decodeText}; line endings normalised to "\n". */
export async function readTextFile(filePath: string): Promise<string> {
  return decodeText(await readFile(filePath)).replace(/\r\n?/g, '\n');
}

/** True when the decoded text looks binary (NUL characters), i.e. not a text file at all. */
export function looksBinary(text: string): boolean {
  return text.slice(0, 8192).includes('\u0000');
}
