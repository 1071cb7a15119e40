/** Display formats shared by the screens. */

/** A timestamp as the person's locale shows date and time; "—" when absent. */
export function formatDate(iso: string | null | undefined): string {
  return iso ? new Date(iso).toLocaleString() : '—';
}

/** A byte count as "1.2 MB" (powers of 1,000, as file managers show sizes); "—" when unknown. */
export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  const units = ['B', 'kB', 'MB', 'GB'];
  let v = n;
  let u = 0;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]}`;
}

/** A confidence in [0, 1] as a percentage, "—" when absent. */
export function formatScore(score: number | null | undefined): string {
  return score === null || score === undefined ? '—' : `${Math.round(score * 100)} %`;
}
