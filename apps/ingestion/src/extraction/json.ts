/**
 * JSON flattened to "path.to.key: value" lines. Scalar fields of one object form one paragraph
 * (so each element of a list of records, e.g. a control of a control list, is one paragraph);
 * nested objects and arrays of objects follow as their own paragraphs. Objects in arrays that
 * contain nested records and have a title/name field also give a heading, so chunks carry the
 * path of titles (e.g. "Administrative Safeguards").
 */
import { readTextFile } from './decode';
import { ExtractionContext } from './context';
import { ExtractedBlock, ExtractedDocument, ExtractionError } from './types';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const TITLE_KEYS = ['title', 'name', 'label', 'heading'];

type Scalar = null | boolean | number | string;

function isScalar(v: Json): v is Scalar {
  return v === null || typeof v !== 'object';
}

function scalarText(v: Scalar): string {
  return v === null ? 'null' : String(v);
}

function childPath(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  const k = /^[A-Za-z_$][\w$-]*$/.test(key) ? key : JSON.stringify(key);
  return path ? `${path}.${k}` : k;
}

function isRecordLike(v: Json): boolean {
  return v !== null && typeof v === 'object' && (!Array.isArray(v) || v.some((x) => x !== null && typeof x === 'object'));
}

function flatten(value: Json, path: string, depth: number, out: ExtractedBlock[]): void {
  if (isScalar(value)) {
    out.push({ kind: 'paragraph', text: `${path || 'value'}: ${scalarText(value)}`, page: null });
    return;
  }
  if (Array.isArray(value)) {
    if (value.every(isScalar)) {
      if (value.length) out.push({ kind: 'paragraph', text: `${path || 'value'}: ${value.map(scalarText).join(', ')}`, page: null });
      return;
    }
    value.forEach((v, i) => flatten(v, childPath(path, i), depth, out));
    return;
  }
  const entries = Object.entries(value);
  const hasNested = entries.some(([, v]) => isRecordLike(v));
  const titleKey = TITLE_KEYS.find((k) => typeof value[k] === 'string' && value[k].trim());
  if (hasNested && titleKey && depth < 6) {
    out.push({ kind: 'heading', text: (value[titleKey] as string).trim(), page: null, level: depth + 1 });
    depth += 1;
  }
  const lines: string[] = [];
  for (const [key, v] of entries) {
    if (isScalar(v)) lines.push(`${childPath(path, key)}: ${scalarText(v)}`);
    else if (Array.isArray(v) && v.every(isScalar)) {
      if (v.length) lines.push(`${childPath(path, key)}: ${v.map(scalarText).join(', ')}`);
    }
  }
  if (lines.length) out.push({ kind: 'paragraph', text: lines.join('\n'), page: null });
  for (const [key, v] of entries) {
    if (!isScalar(v) && !(Array.isArray(v) && v.every(isScalar))) flatten(v, childPath(path, key), depth, out);
  }
}

/** Converts a parsed JSON value into blocks (see the module comment). */
export function jsonToBlocks(value: unknown): ExtractedBlock[] {
  const out: ExtractedBlock[] = [];
  flatten(value as Json, '', 0, out);
  return out;
}

/**
 * Extracts a JSON file. Title: a top-level "title"/"name"/"standard" string, else null.
 * Throws `CORRUPT_FILE` for invalid JSON (with line and column), `NO_TEXT` when empty.
 */
export async function extractJson(_ctx: ExtractionContext, filePath: string): Promise<ExtractedDocument> {
  const text = await readTextFile(filePath);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    const pos = e instanceof Error ? /position (\d+)/.exec(e.message) : null;
    let where = '';
    if (pos) {
      const before = text.slice(0, Number(pos[1]));
      const line = before.split('\n').length;
      where = ` (line ${line}, column ${Number(pos[1]) - before.lastIndexOf('\n')})`;
    }
    throw new ExtractionError('CORRUPT_FILE', `The JSON file is not valid JSON${where}; fix the syntax and upload it again.`);
  }
  const blocks = jsonToBlocks(value);
  if (blocks.length === 0) throw new ExtractionError('NO_TEXT', 'The JSON file contains no values; upload a file with content.');
  let title: string | null = null;
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const obj = value as Record<string, unknown>;
    const key = [...TITLE_KEYS, 'standard'].find((k) => typeof obj[k] === 'string');
    title = key ? (obj[key] as string) : null;
  }
  return { blocks, pageCount: null, title };
}
