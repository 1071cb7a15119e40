/**
 * The evidence viewer as the right-hand pane of the review, compare and Ask screens: a focusable,
 * named region that scrolls on its own beside the list (panes.css), stacked below it on narrow
 * windows.
 */
import { Paper } from '@mantine/core';
import type { KbClient } from '@kb-platform/sdk/browser';
import { EvidenceViewer } from './EvidenceViewer';
import type { EvidenceSource } from './source';

export function EvidencePane({ kb, source }: { kb: KbClient; source: EvidenceSource }) {
  return (
    <Paper withBorder tabIndex={0} role="region" aria-label="Evidence" data-testid="evidence-pane" className="kb-pane" data-grow="wide">
      <EvidenceViewer kb={kb} source={source} />
    </Paper>
  );
}
