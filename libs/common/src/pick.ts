/** `T[P]` with `null`/`undefined` replaced by `A` (kept only where `T[P]` may be absent). */
type Absent<V, A> = NonNullable<V> | (null extends V ? A : undefined extends V ? A : never);

/**
 * A record's fields copied by name into a new object, with absent values spelled one way: the
 * generic picker of records whose fields are the same on both sides of a boundary (a domain record
 * and its ts-proto message), so the field list is written once instead of once per direction.
 * `absent: undefined` gives a ts-proto message (unset optionals); `absent: null` the domain record.
 * Fields not named are dropped (a store's `orgId` never reaches a message); values are not cloned.
 *
 * @param source any object with the named fields (missing ones count as absent).
 * @param keys the fields to copy.
 * @param absent what an absent (`null` or `undefined`) value becomes.
 */
export function pickFields<T extends object, K extends keyof T, A extends null | undefined>(
  source: T,
  keys: readonly K[],
  absent: A,
): { [P in K]-?: Absent<T[P], A> } {
  const out: Record<PropertyKey, unknown> = {};
  for (const key of keys) out[key] = source[key] ?? absent;
  return out as { [P in K]-?: Absent<T[P], A> };
}

/** `someFieldName` → `some_field_name` (type level). */
export type SnakeCase<S extends string> = S extends `${infer C}${infer R}` ? `${C extends Lowercase<C> ? C : `_${Lowercase<C>}`}${SnakeCase<R>}` : S;
/** `some_field_name` → `someFieldName` (type level). */
export type CamelCase<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<CamelCase<T>>}` : S;

/** `rename` computed once per field name: presenters run it for every field of every listed record. */
function memoized(rename: (key: string) => string): (key: string) => string {
  const names = new Map<string, string>();
  return (key) => {
    let name = names.get(key);
    if (name === undefined) names.set(key, (name = rename(key)));
    return name;
  };
}
const snakeCase = memoized((key) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`));
const camelCase = memoized((key) => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()));

/** Copies `keys` of `source` under the name `rename(key)`, absent values as `absent`. */
function pickRenamed(source: object, keys: readonly string[], absent: unknown, rename: (key: string) => string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) out[rename(key)] = (source as Record<string, unknown>)[key] ?? absent;
  return out;
}

/**
 * {@link pickFields} that also renames each field from camelCase to snake_case: a ts-proto message
 * (camelCase) as the API's JSON (snake_case, absent values `null`). Fields keep the order of `keys`,
 * which is the order a client sees them in.
 */
export function pickSnakeFields<T extends object, K extends keyof T & string, A extends null | undefined>(source: T, keys: readonly K[], absent: A) {
  return pickRenamed(source, keys, absent, snakeCase) as { [P in K as SnakeCase<P>]-?: Absent<T[P], A> };
}

/**
 * {@link pickFields} that also renames each field from snake_case to camelCase: a record stored in
 * the API's JSON shape (snake_case) as its ts-proto message (absent values unset with `undefined`).
 */
export function pickCamelFields<T extends object, K extends keyof T & string, A extends null | undefined>(source: T, keys: readonly K[], absent: A) {
  return pickRenamed(source, keys, absent, camelCase) as { [P in K as CamelCase<P>]-?: Absent<T[P], A> };
}
