/**
 * The Riverside depot fixture of the re-run and compare suites (check-rerun-compare, workspace-more):
 * two site requirements and the plan that meets them, in the revisions those suites upload.
 */
export const VISITORS = 'Visitors must sign in at the reception desk.';
export const HARD_HATS = 'Hard hats are required at all times in the loading zone.';

/**
 * The Riverside depot's site plan: its title (a Markdown heading with `markdown`), a blank line, then the
 * sentence that meets {@link VISITORS} (left out with `visitors: false`, the revision that fails it) and
 * the one that meets {@link HARD_HATS}.
 */
export function riversideSitePlan({ markdown, visitors }: { markdown: boolean; visitors: boolean }): string {
  const lines = [`${markdown ? '# ' : ''}Riverside Depot Site Plan`, ''];
  if (visitors) lines.push('Visitors must sign in at the reception desk before entering the depot.');
  lines.push('Hard hats are required at all times in the loading zone.', '');
  return lines.join('\n');
}
