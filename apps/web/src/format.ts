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

/**
 * A requirement's reference and title from its metadata, as "164.312(a)(2)(iii) · Automatic logoff": `ref` (a string
 * or a number, as the reports read it) and `title` (a string under any case of the key, as the check reads it:
 * libs/text requirementWithTitle); whichever is present, null when neither.
 */
export function requirementLabel(metadata: Record<string, unknown> | null | undefined): string | null {
  if (!metadata) return null;
  const ref = typeof metadata.ref === 'string' || typeof metadata.ref === 'number' ? String(metadata.ref).trim() : '';
  const key = Object.keys(metadata).find((k) => k.toLowerCase() === 'title');
  const value = key === undefined ? undefined : metadata[key];
  const title = typeof value === 'string' ? value.replace(/\s+/g, ' ').trim() : '';
  const label = [ref, title].filter(Boolean).join(' · ');
  return label || null;
}
