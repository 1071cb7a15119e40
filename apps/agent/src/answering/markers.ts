/**
 * Checks and renumbers the inline citation markers of a streamed model answer.
 *
 * The model is given passages numbered 1..passageCount and cites them as [n] (also accepted:
 * "[1, 3]", "[1][3]"). Every marker is checked as text arrives: a number that is not a passage
 * the model was given is dropped; a valid one is renumbered to the citation index in order of
 * first use (so citations are 1, 2, 3 … with no gaps, and `index` matches the markers exactly).
 * Text that might be the start of a marker is held back until it is complete, so a marker split
 * across stream deltas is still checked; everything else passes through at once.
 */
export class MarkerFilter {
  /** Passage numbers (1-based, as given to the model) in order of first citation. */
  readonly used: number[] = [];
  private pending = '';

  constructor(private readonly passageCount: number) {}

  /** Feeds a delta; returns the text that is safe to emit now (may be ""). */
  push(text: string): string {
    this.pending += text;
    let out = '';
    for (;;) {
      const open = this.pending.indexOf('[');
      if (open < 0) {
        out += this.pending;
        this.pending = '';
        return out;
      }
      out += this.pending.slice(0, open);
      this.pending = this.pending.slice(open);
      const m = /^\[\s*(\d+(?:\s*[,;]\s*\d+)*)\s*\]/.exec(this.pending);
      if (m) {
        out += this.rewrite(m[1]);
        this.pending = this.pending.slice(m[0].length);
        continue;
      }
      // Could still become a marker: wait for more text (bounded, so plain brackets pass).
      if (/^\[[\d\s,;]*$/.test(this.pending) && this.pending.length < 24) return out;
      out += '[';
      this.pending = this.pending.slice(1);
    }
  }

  /** Ends the stream: returns whatever was held back (an unfinished "[12" is plain text). */
  flush(): string {
    const rest = this.pending;
    this.pending = '';
    return rest;
  }

  private rewrite(list: string): string {
    let out = '';
    for (const n of list.split(/[,;]/).map((s) => Number(s.trim()))) {
      if (!Number.isInteger(n) || n < 1 || n > this.passageCount) continue;
      let idx = this.used.indexOf(n);
      if (idx < 0) {
        this.used.push(n);
        idx = this.used.length - 1;
      }
      out += `[${idx + 1}]`;
    }
    return out;
  }
}

/**
 * Text that a citation index supports: the sentences of `answer` that carry the marker `[index]`
 * (without any markers), or the whole answer when none can be isolated.
 */
export function claimFor(answer: string, index: number): string {
  const marker = `[${index}]`;
  const sentences = answer.split(/(?<=[.!?])\s+|\n+/).filter((s) => s.includes(marker));
  const text = (sentences.length > 0 ? sentences.join(' ') : answer).replace(/\s*\[\d+\]/g, '');
  return text.replace(/\s+/g, ' ').trim();
}
