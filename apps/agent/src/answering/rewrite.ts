import { analyze } from '@kb/text';

export interface ConversationMessage {
  role: 'user' | 'assistant';
  content: string;
}

/** Words that make a message depend on earlier turns ("what about it", "and those?", "how high?"). */
const ANAPHORA = new Set([
  'it', 'its', 'they', 'them', 'their', 'this', 'that', 'these', 'those', 'he', 'she', 'there', 'one', 'ones', 'same', 'also', 'too', 'else', 'other', 'former', 'latter',
]);
const FOLLOW_UP_OPENERS = /^\s*(?:and|also|but|or|so|then|what about|how about|what if|why|how come|same|which one|more|tell me more|explain|elaborate|and what)\b/i;

/** A follow-up with at most this many content terms borrows context from earlier user turns. */
const SHORT_MESSAGE_TERMS = 4;

/**
 * Whether the last user message needs the conversation to be understood: it opens like a
 * follow-up ("and …", "what about …"), refers back with a pronoun ("it", "those" …), or has only a
 * few content terms.
 */
export function isFollowUp(message: string): boolean {
  if (FOLLOW_UP_OPENERS.test(message)) return true;
  if ((message.toLowerCase().match(/\p{L}+/gu) ?? []).some((w) => ANAPHORA.has(w))) return true;
  return analyze(message).length <= SHORT_MESSAGE_TERMS;
}

/**
 * Deterministic retrieval-query rewrite for a conversation (used when no chat model is configured).
 *
 * The query is the last user message; when it is a follow-up ({@link isFollowUp}) and there are
 * earlier user turns, the earlier user messages (newest first, at most two) are appended, so the
 * topic words of the conversation ("scaffold", "guardrail") join the follow-up's own words ("how
 * high?"). Assistant turns are not used: they quote documents and would drag unrelated terms in.
 * Retrieval is lexical + dense over the whole string, and the answerer weights terms by IDF, so the
 * follow-up's own words stay decisive.
 *
 * @param messages the history, last one from the user.
 * @returns the query to retrieve with; the last message itself when it stands alone.
 */
export function rewriteQuery(messages: ConversationMessage[]): string {
  const last = messages[messages.length - 1]?.content ?? '';
  const earlier = messages
    .slice(0, -1)
    .filter((m) => m.role === 'user')
    .map((m) => m.content.trim())
    .filter(Boolean);
  if (earlier.length === 0 || !isFollowUp(last)) return last.trim();
  return [last.trim(), ...earlier.slice(-2).reverse()].join(' ');
}
