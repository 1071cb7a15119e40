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
