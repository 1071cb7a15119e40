/** Separator between the headings of a section path (decisions.md "Chunks": "Part 2 > Scope"). */
export const SECTION_SEPARATOR = ' > ';

/**
 * The `section` of a chunk as the API shows it: its heading path (outermost heading first, as the
 * chunker records it in `heading_path`) joined by {@link SECTION_SEPARATOR}, with blank headings
 * and surrounding whitespace dropped; `null` when the chunk is under no heading.
 * Example: `['Part 2', 'Scope']` → `"Part 2 > Scope"`; `[]` → `null`.
 */
export function sectionOf(headingPath: readonly string[]): string | null {
  const parts = headingPath.map((h) => h.replace(/\s+/g, ' ').trim()).filter((h) => h !== '');
  return parts.length === 0 ? null : parts.join(SECTION_SEPARATOR);
}
