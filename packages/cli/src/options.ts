import { InvalidArgumentError } from 'commander';

/**
 * Commander parser of a repeatable, comma-separated option (`--events a,b --events c` → `['a','b','c']`);
 * blanks are dropped.
 */
export const list = (value: string, previous: string[] = []): string[] => [
  ...previous,
  ...value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean),
];

/**
 * Commander parser of a whole-number option (`--limit 50`).
 * @throws InvalidArgumentError (a usage error, exit 2) for anything but digits
 */
export const int = (value: string): number => {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`not a whole number: ${value}`);
  return Number(value);
};

/**
 * The entries of `fields` whose value is truthy: the body fields of the options a user gave, so that an
 * option left out (or given empty) is not sent and the API applies its default.
 * `{ project_id: undefined, top_k: 5 }` → `{ top_k: 5 }`.
 */
export function givenFields<T extends Record<string, unknown>>(fields: T): Partial<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => Boolean(v))) as Partial<T>;
}
