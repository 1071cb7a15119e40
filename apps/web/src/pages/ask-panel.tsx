/**
 * The project's "Ask" tab (issue 31 item 7): questions about the project's current documents,
 * answered by the project agent through POST /api/v2/chat streamed as Server-Sent Events (the
 * SDK's `chat`), the answer shown as it arrives. Its markers ([1], [2]…) and its list of citations
 * (file, pages, quote) open the evidence viewer beside the conversation. Follow-up questions are
 * sent with the conversation so far. An answer without citations says plainly that the documents
 * do not answer the question; one below 70 % confidence says to check its sources.
 *
 * The conversation is kept by the project page ({@link useConversation}), so it survives switching
 * tabs; it is gone when the person leaves the project (nothing is stored).
 */
import { Alert, Badge, Button, Group, Paper, Stack, Text, Textarea, UnstyledButton } from '@mantine/core';
import { useCallback, useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { chat } from '@kb-platform/sdk/browser';
import { foundNothing, historyFor, pagesLabel, segmentsOf, CONFIDENT, type ChatCitation, type Turn } from '../ask/conversation';
import { describeError } from '../errors';
import { EvidencePane, fromCitation } from '../evidence';
import { formatScore } from '../format';
import { useKb } from '../session';

/** A conversation with the project agent: its turns, and asking, stopping, starting again. */
export interface Conversation {
  turns: Turn[];
  busy: boolean;
  // Properties, not methods: the panel destructures them (they are closures, no `this`).
  ask: (question: string) => void;
  stop: () => void;
  clear: () => void;
}

/**
 * Holds a conversation about project `projectId`; a question is streamed with the answered turns
 * before it ({@link historyFor}). Leaving the page or the project stops a streaming answer and
 * drops the conversation.
 */
export function useConversation(projectId: string): Conversation {
  const kb = useKb();
  const [turns, setTurns] = useState<Turn[]>([]);
  const current = useRef<Turn[]>(turns);
  current.current = turns;
  const abort = useRef<AbortController | null>(null);
  const nextId = useRef(1);
  // Another project, or leaving the page: the stream stops and the conversation is dropped.
  useEffect(
    () => () => {
      abort.current?.abort();
      abort.current = null;
      setTurns([]);
    },
    [projectId],
  );

  const ask = useCallback(
    (question: string) => {
      if (abort.current) return;
      const id = nextId.current++;
      const controller = new AbortController();
      abort.current = controller;
      const messages = historyFor(current.current, question);
      const update = (f: (t: Turn) => Turn) => setTurns((all) => all.map((t) => (t.id === id ? f(t) : t)));
      setTurns((all) => [...all, { id, question, answer: '', citations: [], confidence: null, agent: null, state: 'streaming' }]);
      void (async () => {
        try {
          for await (const event of chat(kb, { chat_type: 'project', project_id: projectId, messages }, { signal: controller.signal })) {
            if (event.event === 'meta') update((t) => ({ ...t, agent: event.data.agent }));
            else if (event.event === 'delta') update((t) => ({ ...t, answer: t.answer + event.data.content }));
            else if (event.event === 'citations') update((t) => ({ ...t, citations: event.data.citations, confidence: event.data.confidence }));
            else if (event.event === 'done') update((t) => ({ ...t, state: 'done' }));
          }
          update((t) => (t.state === 'streaming' ? { ...t, state: 'done' } : t));
        } catch (e) {
          if (controller.signal.aborted) update((t) => ({ ...t, state: 'stopped' }));
          else update((t) => ({ ...t, state: 'failed', error: describeError(e) }));
        } finally {
          if (abort.current === controller) abort.current = null;
        }
      })();
    },
    [kb, projectId],
  );
  const stop = useCallback(() => abort.current?.abort(), []);
  const clear = useCallback(() => {
    abort.current?.abort();
    abort.current = null;
    setTurns([]);
  }, []);
  return { turns, busy: turns.some((t) => t.state === 'streaming'), ask, stop, clear };
}

export function AskPanel({ conversation }: { conversation: Conversation }) {
  const kb = useKb();
  const { turns, busy, ask, stop, clear } = conversation;
  const [question, setQuestion] = useState('');
  const [shown, setShown] = useState<{ turnId: number; citation: ChatCitation } | null>(null);
  const log = useRef<HTMLDivElement>(null);
  const last = turns.at(-1);

  // Follow the answer as it streams in.
  useEffect(() => {
    const el = log.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [turns.length, last?.answer.length, last?.citations.length]);
  // A cleared conversation closes the viewer.
  useEffect(() => {
    if (shown && !turns.some((t) => t.id === shown.turnId)) setShown(null);
  }, [turns, shown]);

  function submit(event?: FormEvent) {
    event?.preventDefault();
    const q = question.trim();
    if (!q || busy) return;
    ask(q);
    setQuestion('');
  }
  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>) {
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      submit();
    }
  }
  const open = (turnId: number, citation: ChatCitation) => setShown({ turnId, citation });

  return (
    <div className="kb-panes" style={{ ['--kb-pane-height' as string]: 'calc(100vh - 250px)' }}>
      <Stack className="kb-pane" style={{ overflowY: 'visible', maxHeight: 'none' }} gap="sm">
        <div ref={log} role="log" aria-label="Conversation" tabIndex={0} style={{ maxHeight: 'calc(100vh - 380px)', minHeight: 120, overflowY: 'auto' }}>
          {turns.length === 0 ? (
            <Text c="dimmed">
              Ask about this project's documents: the answer quotes them, and each citation opens the passage it comes from. Follow-up questions keep the
              conversation.
            </Text>
          ) : (
            <Stack gap="md">
              {turns.map((t) => (
                <TurnView key={t.id} turn={t} shown={shown?.turnId === t.id ? shown.citation : null} onOpen={(c) => open(t.id, c)} />
              ))}
            </Stack>
          )}
        </div>
        <form onSubmit={submit}>
          <Stack gap="xs">
            <Textarea
              label={turns.length ? 'Follow-up question' : 'Question'}
              description="Enter sends; Shift+Enter starts a new line."
              autosize
              minRows={2}
              maxRows={6}
              maxLength={8000}
              value={question}
              onChange={(e) => setQuestion(e.currentTarget.value)}
              onKeyDown={onKeyDown}
            />
            <Group gap="xs">
              <Button type="submit" disabled={!question.trim() || busy}>
                Ask
              </Button>
              {busy && (
                <Button variant="default" onClick={stop}>
                  Stop
                </Button>
              )}
              {turns.length > 0 && (
                <Button variant="default" onClick={clear}>
                  New conversation
                </Button>
              )}
            </Group>
          </Stack>
        </form>
      </Stack>
      {shown && <EvidencePane kb={kb} source={fromCitation(shown.citation)} />}
    </div>
  );
}

function TurnView({ turn, shown, onOpen }: { turn: Turn; shown: ChatCitation | null; onOpen: (c: ChatCitation) => void }) {
  const nothing = foundNothing(turn);
  return (
    <Stack gap={6} data-testid="turn">
      <Paper p="xs" bg="gray.1">
        <Text size="sm" fw={600}>
          You asked
        </Text>
        <Text size="sm" style={{ whiteSpace: 'pre-wrap' }} data-testid="question">
          {turn.question}
        </Text>
      </Paper>
      <section aria-label="Answer" aria-busy={turn.state === 'streaming'} data-testid="answer" data-state={turn.state}>
        <Group gap="xs" mb={4}>
          <Text size="sm" fw={600}>
            Answer
          </Text>
          {turn.state === 'streaming' && <Text size="xs">writing…</Text>}
          {turn.state === 'stopped' && <Badge color="gray">stopped</Badge>}
          {turn.state === 'done' && !nothing && turn.confidence !== null && (
            <Text size="xs" data-testid="answer-confidence">
              confidence {formatScore(turn.confidence)}
              {turn.confidence < CONFIDENT ? ' · the sources may not answer this: check them' : ''}
            </Text>
          )}
        </Group>
        {nothing && (
          <Alert color="yellow" title="Not found in this project's documents" mb={6} data-testid="not-found">
            No passage of the project's current documents answers this question, so nothing is cited. Try other words, or check that the document is uploaded
            and completed.
          </Alert>
        )}
        {turn.state === 'failed' ? (
          <Alert color="red" title="No answer">
            {turn.error}
          </Alert>
        ) : (
          <Text size="sm" style={{ whiteSpace: 'pre-wrap' }} data-testid="answer-text">
            {segmentsOf(turn.answer, turn.citations).map((s, i) =>
              'text' in s ? (
                <span key={i}>{s.text}</span>
              ) : (
                <UnstyledButton
                  key={i}
                  onClick={() => onOpen(s.citation!)}
                  aria-label={`Citation ${s.marker}: ${s.citation!.file_name}`}
                  aria-pressed={shown === s.citation}
                  data-testid="marker"
                  style={{ color: 'var(--mantine-color-blue-9)', fontWeight: 600, textDecoration: 'underline', fontSize: 'inherit' }}
                >
                  [{s.marker}]
                </UnstyledButton>
              ),
            )}
          </Text>
        )}
        {turn.citations.length > 0 && (
          <Stack gap={4} mt={6} component="ol" style={{ listStyle: 'none', padding: 0, margin: 0 }} aria-label="Citations">
            {turn.citations.map((c) => (
              <li key={c.index}>
                <UnstyledButton
                  onClick={() => onOpen(c)}
                  aria-pressed={shown === c}
                  data-testid="citation"
                  p={6}
                  w="100%"
                  style={{
                    borderRadius: 4,
                    border: '1px solid var(--mantine-color-gray-4)',
                    background: shown === c ? 'var(--mantine-color-blue-0)' : undefined,
                  }}
                >
                  <Text size="sm" fw={600}>
                    [{c.index}] {c.file_name}
                    {pagesLabel(c) ? `, ${pagesLabel(c)}` : ''}
                  </Text>
                  <Text size="sm" fs="italic" lineClamp={2}>
                    “{c.quote}”
                  </Text>
                </UnstyledButton>
              </li>
            ))}
          </Stack>
        )}
      </section>
    </Stack>
  );
}
