/**
 * The text of a chunk with its quote marked: the evidence viewer's view of formats without pages
 * (and of PDFs whose quote has no boxes).
 */
import { Alert, Mark, Stack } from '@mantine/core';
import { useEffect, useRef } from 'react';
import type { QuoteLocation } from '@kb-platform/sdk/browser';
import { locationFits } from './source';
import './evidence.css';
import { scrollIntoContainer } from './scroll';

/** Props of {@link ChunkTextView}. */
export interface ChunkTextViewProps {
  /** The chunk's `text` (GET /api/v2/documents/{id}/chunks/{chunk_id}). */
  text: string;
  /** Offsets of the quote in `text` (UTF-16 code units, end exclusive); null when not recorded. */
  location: QuoteLocation | null;
}

/**
 * The passage, line breaks kept, with `text.slice(char_start, char_end)` in a <mark>
 * (data-testid="quote-mark", its textContent the quote) scrolled into view; screen readers hear
 * where the quote begins and ends (generated content, not part of the text nor of a copy). When the quote cannot be placed, the whole passage with a note saying so.
 */
export function ChunkTextView({ text, location }: ChunkTextViewProps) {
  const markRef = useRef<HTMLElement>(null);
  const fits = locationFits(text, location);
  const start = fits ? location.char_start : 0;
  const end = fits ? location.char_end : 0;

  useEffect(() => {
    if (!fits) return;
    if (markRef.current) scrollIntoContainer(markRef.current);
  }, [fits, text, start, end]);

  return (
    <Stack gap="sm">
      {fits ? null : (
        <Alert color="yellow" title="The quote could not be placed in this passage">
          The passage is shown whole; look for the quoted words in it.
        </Alert>
      )}
      <p className="kb-evidence-text" data-testid="chunk-text">
        {fits ? (
          <>
            {text.slice(0, start)}
            <Mark ref={markRef} color="yellow" data-testid="quote-mark">
              {text.slice(start, end)}
            </Mark>
            {text.slice(end)}
          </>
        ) : (
          text
        )}
      </p>
    </Stack>
  );
}
