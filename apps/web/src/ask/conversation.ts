/**
 * A conversation about a project's documents (issue 31 item 7): the turns kept in the Ask tab,
 * the message history sent with each new question (POST /api/v2/chat), and an answer's text cut
 * at its citation markers ([1], [2]…) so that each marker can open its citation.
 */
import type { components } from '@kb-platform/sdk/browser';

/** An answer's citation as the API gives it (`citations[]` of a chat reply). */
export type ChatCitation = components['schemas']['CitationView'];

/** Most messages in one chat request (decisions.md "Agent"; libs/common limits.ts MAX_CHAT_MESSAGES). */
export const MAX_CHAT_MESSAGES = 50;
/** Longest message content the API takes, in characters (the chat DTO's CharLength 1..8000). */
export const MAX_MESSAGE_CHARS = 8000;
/** Below this confidence the sources may not answer the question (the API's calibrated threshold, decisions.md "Agent"). */
export const CONFIDENT = 0.7;

/** One question and its answer, as it streams in. */
export interface Turn {
  id: number;
  question: string;
  /** The answer's text so far (the `delta` events joined). */
  answer: string;
  /** From the `citations` event; [] until it arrives, and [] when nothing was found. */
  citations: ChatCitation[];
  /** From the `citations` event (0–1); null until it arrives. */
  confidence: number | null;
  /** The agent that answered (`meta` event): project, general or safety; null until known. */
  agent: string | null;
  /** `streaming` until `done`; `stopped` when the person stopped it; `failed` with `error`. */
  state: 'streaming' | 'done' | 'stopped' | 'failed';
  error?: string;
}

/** A chat message as POST /api/v2/chat takes it. */
export interface ChatMessage {
  role: 'user' | 'assistant';
  content: string;
}

/**
 * The messages to send for `question` after `turns`: each answered turn (state `done`, answer not
 * empty) as its question and answer, then the new question. The oldest turns are left out so the
 * request has at most {@link MAX_CHAT_MESSAGES} messages; a content longer than
 * {@link MAX_MESSAGE_CHARS} is cut to that length (the new question is limited by its field).
 */
export function historyFor(turns: readonly Turn[], question: string): ChatMessage[] {
  const cut = (s: string) => (s.length > MAX_MESSAGE_CHARS ? s.slice(0, MAX_MESSAGE_CHARS) : s);
  const answered = turns.filter((t) => t.state === 'done' && t.answer.trim() !== '');
  const kept = answered.slice(Math.max(0, answered.length - Math.floor((MAX_CHAT_MESSAGES - 1) / 2)));
  return [
    ...kept.flatMap((t): ChatMessage[] => [
      { role: 'user', content: cut(t.question) },
      { role: 'assistant', content: cut(t.answer) },
    ]),
    { role: 'user', content: question },
  ];
}

/** A piece of an answer: plain text, or a marker `[n]` with the citation it names (null when none has that index). */
export type Segment = { text: string } | { marker: number; citation: ChatCitation | null };

/**
 * `answer` cut at its markers `[n]` (n a whole number), each marker with the citation whose
 * `index` is n. A marker is kept as text while it has no citation (before the `citations` event,
 * or a bracketed number that is not a marker).
 */
export function segmentsOf(answer: string, citations: readonly ChatCitation[]): Segment[] {
  const byIndex = new Map(citations.map((c) => [c.index, c]));
  const out: Segment[] = [];
  let last = 0;
  for (const m of answer.matchAll(/\[(\d+)\]/g)) {
    const citation = byIndex.get(Number(m[1])) ?? null;
    if (!citation) continue;
    if (m.index > last) out.push({ text: answer.slice(last, m.index) });
    out.push({ marker: Number(m[1]), citation });
    last = m.index + m[0].length;
  }
  if (last < answer.length) out.push({ text: answer.slice(last) });
  return out;
}

/** Whether a finished turn found nothing: no citation (the service then says nothing was found). */
export function foundNothing(turn: Turn): boolean {
  return turn.state === 'done' && turn.citations.length === 0;
}

/** Pages of a citation as a label: "p. 3", "pp. 3–4", '' for formats without pages. */
export function pagesLabel(c: Pick<ChatCitation, 'start_page' | 'end_page'>): string {
  if (!c.start_page) return '';
  return c.end_page && c.end_page !== c.start_page ? `pp. ${c.start_page}–${c.end_page}` : `p. ${c.start_page}`;
}
