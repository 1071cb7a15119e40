import { analyze } from '@kb/text';

export interface ConversationMessage {
  role: 'user' | 'assistant';
  content: string;
}

/** Words that make a message depend on earlier turns ("what about it", "and those?", "how high?"). */
const ANAPHORA = new Set([
  'it',
  'its',
  'they',
  'them',
  'their',
  'this',
  'that',
  'these',
  'those',
  'he',
  'she',
  'there',
  'one',
  'ones',
  'same',
  'also',
  'too',
  'else',
  'other',
  'former',
  'latter',
]);
const FOLLOW_UP_OPENERS =
  /^\s*(?:and|also|but|or|so|then|what about|how about|what if|why|how come|same|which one|more|tell me more|explain|elaborate|and what)\b/i;

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
 * Deterministic rewrite of a conversation into a stand-alone question (used when no chat model is
 * configured), both for retrieval and for judging whether the passages answer it.
 *
 * The result is the last user message; when it is a follow-up ({@link isFollowUp}) and there are
 * earlier user turns, the content words of the earlier user messages (newest first, at most two
 * messages; stop words, the word after "how", words already in the last message and repeats left
 * out) are appended, so
 * the topic of the conversation ("scaffold platform") joins the follow-up's own question ("And how
 * often must it be inspected?") without the earlier questions' own wording ("how wide must … be"),
 * which would make the follow-up look like a different question. Assistant turns are not used:
 * they quote documents and would drag unrelated terms in.
 *
 * @param messages the history, last one from the user.
 * @returns the stand-alone question; the last message itself when it stands alone.
 */
export function rewriteQuery(messages: ConversationMessage[]): string {
  const last = (messages[messages.length - 1]?.content ?? '').trim();
  const earlier = messages
    .slice(0, -1)
    .filter((m) => m.role === 'user')
    .map((m) => m.content.trim())
    .filter(Boolean);
  if (earlier.length === 0 || !isFollowUp(last)) return last;
  const seen = new Set(analyze(last));
  const topic: string[] = [];
  for (const message of earlier.slice(-2).reverse()) {
    const words = message.match(/[\p{L}\p{N}][\p{L}\p{N}'-]*/gu) ?? [];
    for (const [i, word] of words.entries()) {
      // "how wide", "how often": what the earlier question asked, not its topic.
      if (i > 0 && words[i - 1].toLowerCase() === 'how') continue;
      const terms = analyze(word);
      if (terms.length === 0 || terms.every((t) => seen.has(t))) continue;
      terms.forEach((t) => seen.add(t));
      topic.push(word);
    }
  }
  return topic.length > 0 ? `${last} ${topic.join(' ')}` : last;
}
