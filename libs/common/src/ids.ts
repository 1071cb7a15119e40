const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `value` is a UUID string (any version; the canonical 8-4-4-4-12 hex form). */
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID_RE.test(value);
}

/** Order-preserving de-duplication. */
export function unique<T>(values: Iterable<T>): T[] {
  return [...new Set(values)];
}
