/**
 * A source as a CSV / XLSX / PDF cell shows it: `file_name p.X-Y` (`p.X-X` for one page), just `file_name` for a
 * format without pages (`startPage` null or undefined). Used by the batches' CSV export and the check-run reports.
 */
export function sourceLabel(fileName: string, startPage: number | null | undefined, endPage: number | null | undefined): string {
  return startPage != null ? `${fileName} p.${startPage}-${endPage ?? startPage}` : fileName;
}
