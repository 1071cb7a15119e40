/**
 * Shape limits of JSON request bodies, checked in linear time before anything costlier looks at a
 * body (issue 29: class-transformer's `plainToInstance`, which Nest's ValidationPipe runs, removes
 * duplicate keys with a filter that is quadratic in an object's key count, and V8's `JSON.parse`
 * itself slows down sharply on objects of many thousands of keys: one 6 MB body of 500,000 keys
 * held the event loop, and every other request, for minutes). docs/gateway.md "Body limits".
 */

/** Deepest nesting of objects/arrays accepted in a JSON body (the body itself is level 1). */
export const MAX_JSON_DEPTH = 32;

/**
 * Most keys one JSON object of a request body may have. The API's request objects have at most a
 * dozen fields and `metadata` at most {@link METADATA_MAX_MEMBERS}; 100 leaves room for clients
 * that send extra fields (unknown fields are dropped, service-api.md §1) while bounding the
 * per-object cost of validation.
 */
export const MAX_OBJECT_KEYS = 100;

/**
 * Most keys and array items a request body may hold in all its levels. The largest legitimate
 * body, a run of 1,000 requirements each with a full `metadata` ({@link METADATA_MAX_MEMBERS}),
 * holds about 68,000; validation costs about a microsecond per member, so this bounds it near 0.1 s.
 */
export const MAX_BODY_MEMBERS = 100_000;

/** Most keys and array items one free-form `metadata` object may hold, in all its levels. */
export const METADATA_MAX_MEMBERS = 64;
/** Deepest nesting inside a free-form `metadata` object (the object itself is level 1). */
export const METADATA_MAX_DEPTH = 5;
/** Largest free-form `metadata` object, serialized as JSON (UTF-8 bytes): 16 KiB. */
export const METADATA_MAX_BYTES = 16_384;

const OBJECT = 0;
const ARRAY = 1;

/**
 * Checks the shape of a JSON text before it is parsed, in one pass over the text without
 * building anything: nesting over {@link MAX_JSON_DEPTH}, an object of more than
 * {@link MAX_OBJECT_KEYS} keys, or more than {@link MAX_BODY_MEMBERS} keys and array items in all.
 * Stops at the first limit passed, so a huge body is refused after reading only its beginning.
 * Malformed JSON is left to the parser (it may pass here).
 * @param text the decoded request body
 * @returns a 400 message naming the limit and where it was passed (`requirements[3].metadata`),
 *   or null when the shape is within the limits.
 */
export function jsonShapeProblem(text: string): string | null {
  const n = text.length;
  const kind: number[] = [];
  const count: number[] = [];
  const keyStart: number[] = [];
  const keyEnd: number[] = [];
  let depth = 0;
  let total = 0;
  let strStart = -1;
  let strEnd = -1;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      let j = i + 1;
      for (;;) {
        j = text.indexOf('"', j);
        if (j === -1) return null;
        let backslashes = 0;
        while (text.charCodeAt(j - 1 - backslashes) === 0x5c) backslashes++;
        if (backslashes % 2 === 0) break;
        j++;
      }
      strStart = i;
      strEnd = j;
      i = j;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      depth++;
      if (depth > MAX_JSON_DEPTH) return `The request body is nested deeper than ${MAX_JSON_DEPTH} levels.`;
      kind[depth] = c === 0x7b ? OBJECT : ARRAY;
      count[depth] = 0;
      if (c === 0x5b) {
        let k = i + 1;
        while (k < n && (text.charCodeAt(k) === 0x20 || text.charCodeAt(k) === 0x0a || text.charCodeAt(k) === 0x0d || text.charCodeAt(k) === 0x09)) k++;
        if (k < n && text.charCodeAt(k) !== 0x5d) {
          count[depth] = 1;
          if (++total > MAX_BODY_MEMBERS) return tooManyMembers();
        }
      }
    } else if (c === 0x3a /* : */) {
      if (depth > 0 && kind[depth] === OBJECT) {
        keyStart[depth] = strStart;
        keyEnd[depth] = strEnd;
        if (++count[depth] > MAX_OBJECT_KEYS) {
          const where = pathOf(text, depth, kind, count, keyStart, keyEnd);
          return `${where ? `The object at ${where}` : 'The request body'} has more than ${MAX_OBJECT_KEYS} keys: an object in a request body may have at most ${MAX_OBJECT_KEYS}.`;
        }
        if (++total > MAX_BODY_MEMBERS) return tooManyMembers();
      }
    } else if (c === 0x2c /* , */) {
      if (depth > 0 && kind[depth] === ARRAY) {
        count[depth]++;
        if (++total > MAX_BODY_MEMBERS) return tooManyMembers();
      }
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      if (depth > 0) depth--;
    }
  }
  return null;
}

function tooManyMembers(): string {
  return `The request body holds more than ${MAX_BODY_MEMBERS.toLocaleString('en-US')} keys and array items in all: a request body may hold at most ${MAX_BODY_MEMBERS.toLocaleString('en-US')}.`;
}

/** The path (`requirements[3].metadata`) of the container at `depth`, from its parents' current key or index. */
function pathOf(text: string, depth: number, kind: number[], count: number[], keyStart: number[], keyEnd: number[]): string {
  let path = '';
  for (let level = 1; level < depth; level++) {
    if (kind[level] === ARRAY) {
      path += `[${count[level] - 1}]`;
      continue;
    }
    let key: string;
    try {
      key = JSON.parse(text.slice(keyStart[level], keyEnd[level] + 1)) as string;
    } catch {
      key = text.slice(keyStart[level] + 1, keyEnd[level]);
    }
    path += path ? `.${key}` : key;
  }
  return path;
}

/**
 * Checks a free-form `metadata` value (already parsed) against {@link METADATA_MAX_MEMBERS},
 * {@link METADATA_MAX_DEPTH} and {@link METADATA_MAX_BYTES}. Iterative; stops at the first limit passed.
 * @returns what is wrong, phrased to follow the field's name (`must have at most 64 keys…`), or
 *   null when within the limits (or not an object: `IsObject` reports that).
 */
export function metadataProblem(value: unknown): string | null {
  if (value === null || typeof value !== 'object') return null;
  let members = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d > METADATA_MAX_DEPTH) return `must be nested at most ${METADATA_MAX_DEPTH} levels deep`;
    const children = Array.isArray(v) ? v : Object.values(v);
    members += children.length;
    if (members > METADATA_MAX_MEMBERS) return `must have at most ${METADATA_MAX_MEMBERS} keys and array items in all`;
    for (const child of children) if (child !== null && typeof child === 'object') stack.push([child, d + 1]);
  }
  if (Buffer.byteLength(JSON.stringify(value)) > METADATA_MAX_BYTES) return `must be at most ${METADATA_MAX_BYTES} bytes (16 KiB) as JSON`;
  return null;
}
