import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { startScriptedOpenAiServer, type ScriptedOpenAiServer, type ScriptedRequestBody } from '@kb/models/testing';
import { api, newOrg, ROOT, ExtraStack, llmEnv, startExtraStack, streamChat as streamChatAt } from './support/harness';

jest.setTimeout(300_000);

const SAMPLES = path.join(ROOT, 'samples/safety-corpus');
const SAMPLE_TEXT = readdirSync(SAMPLES)
  .map((f) => readFileSync(path.join(SAMPLES, f), 'utf8'))
  .join('\n')
  .replace(/\s+/g, ' ');

const isJsonCall = (b: ScriptedRequestBody, name: string) => JSON.stringify(b.response_format ?? {}).includes(`"${name}"`);
const lastUser = (b: ScriptedRequestBody) => [...b.messages].reverse().find((m) => m.role === 'user')?.content ?? '';

/**
 * Faults of the agent with a chat model configured, against a scripted OpenAI-compatible server on
 * a stack of its own (what a real model cannot be made to do on demand): markers naming passages
 * that do not exist or split across deltas are dropped and renumbered (quotes stay verbatim); a slow
 * model gets heartbeats and a client disconnect cancels it; model failures become `error` events or
 * 503; a batch worker killed mid-batch loses nothing and a question the model rejects is recorded
 * as failed. The working path (route, rewrite, answers, streaming, batches, token usage) runs
 * against a real model in real-model.e2e-spec.ts.
 */
describe('agent with a chat model configured', () => {
  let dir: string;
  let stack: ExtraStack | undefined;
  let baseUrl: string;
  let databaseUrl: string;
  let model: ScriptedOpenAiServer;
  let org: { orgId: string; key: string };
  /** Every answer call (not routing) for a `CRASH …` question: the question and when it reached the model (ms). */
  const crashCalls: { question: string; at: number }[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'kb-e2e-model-'));
    model = await startScriptedOpenAiServer((body) => {
      if (isJsonCall(body, 'route')) return { content: JSON.stringify({ safety: /ladder|scaffold|trench|guardrail|helmet/i.test(lastUser(body)) }) };
      const q = lastUser(body);
      if (q.includes('SLOW')) return { content: 'Late answer [1].', delayMs: 6000 };
      if (q.includes('BROKEN')) return { status: 500 };
      if (q.includes('FAIL')) return { status: 400 };
      if (q.includes('CRASH')) {
        crashCalls.push({ question: q, at: Date.now() });
        return { content: 'Guardrails are 42 inches high [1].', delayMs: 1500 };
      }
      return {
        content: 'Protection starts at 6 feet [2]. Rails are 42 inches high [1][99]. See also [2].',
        chunks: ['Protection starts at 6 feet [', '2]. Rails are 42 inches high [1][9', '9]. See also [2].'],
      };
    });
    const env = {
      LOG_LEVEL: 'info',
      ...llmEnv(model.baseUrl, 'scripted-model'),
      AGENT_BATCH_CONCURRENCY: '2',
      CHAT_SSE_HEARTBEAT_MS: '1000',
    };
    stack = await startExtraStack(path.join(dir, 'stack'), env);
    ({ baseUrl, databaseUrl } = stack);
    org = newOrg('Model Org', { safety: true, databaseUrl });
    execFileSync(process.execPath, [path.join(ROOT, 'dist/apps/gateway/src/cli/kbctl.js'), 'safety', 'load', SAMPLES, '--json'], {
      env: { ...process.env, DATABASE_URL: databaseUrl, KB_DATA_DIR: path.join(dir, 'stack') },
      encoding: 'utf8',
    });
  });

  afterAll(async () => {
    await stack?.stop();
    await model?.close();
    if (dir) rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  const streamChat = (body: object, opts: { abortAfter?: string } = {}) => streamChatAt(org.key, body, opts, baseUrl);

  it('markers the model gets wrong are checked against the passages and renumbered; quotes are verbatim', async () => {
    const before = model.requests.length;
    const res = await api(org.key, baseUrl)
      .post('/api/v2/agent/query')
      .send({ question: 'How high are guardrails and when is fall protection needed?', chat_type: 'safety', top_k: 5 });
    expect(res.status).toBe(200);
    const d = res.body.data;
    expect(d.model).toBe('scripted-model');
    expect(d.agent).toBe('safety');
    // [2] → [1], [1] → [2], [99] (not a passage) dropped.
    expect(d.answer).toBe('Protection starts at 6 feet [1]. Rails are 42 inches high [2]. See also [1].');
    expect(d.citations.map((c: any) => c.index)).toEqual([1, 2]);
    for (const c of d.citations) expect(SAMPLE_TEXT).toContain(c.quote.replace(/\s+/g, ' ').trim());
    const call = model.requests.slice(before).find((r) => r.stream)!;
    expect(call.messages[0].content).toContain('[5] ');
    expect(call.messages[0].content).not.toContain('[6] ');
    expect(d.usage.total_tokens).toBeGreaterThan(0);
  });

  it('streams the model answer as SSE with markers checked across delta boundaries', async () => {
    const { res, events } = await streamChat({ chat_type: 'safety', top_k: 5, messages: [{ role: 'user', content: 'How high are guardrails?' }] });
    expect(res.status).toBe(200);
    const names = events.map((e) => e.event);
    expect(names[0]).toBe('meta');
    expect(names.slice(-2)).toEqual(['citations', 'done']);
    expect(JSON.parse(events[0].data).model).toBe('scripted-model');
    const text = events
      .filter((e) => e.event === 'delta')
      .map((e) => JSON.parse(e.data).content)
      .join('');
    expect(text.trim()).toBe('Protection starts at 6 feet [1]. Rails are 42 inches high [2]. See also [1].');
    expect(JSON.parse(events[names.indexOf('citations')].data).citations.map((c: any) => c.index)).toEqual([1, 2]);
  });

  it('sends heartbeats while the model is slow, and a client disconnect cancels the model call', async () => {
    const agentLog = path.join(dir, 'stack', 'logs', 'agent.log');
    const cancelled = () => (readFileSync(agentLog, 'utf8').match(/cancelled by the caller/g) ?? []).length;
    const before = cancelled();
    const started = Date.now();
    const { events, comments } = await streamChat(
      { chat_type: 'safety', messages: [{ role: 'user', content: 'SLOW: ladder angle?' }] },
      { abortAfter: 'meta' },
    );
    expect(events.map((e) => e.event)).toEqual(['meta']);
    // Heartbeat test: a separate, full stream of the slow answer.
    const full = await streamChat({ chat_type: 'safety', messages: [{ role: 'user', content: 'SLOW: ladder angle again?' }] });
    expect(full.comments.filter((c) => c.includes('heartbeat')).length).toBeGreaterThanOrEqual(3);
    expect(full.events.map((e) => e.event).slice(-1)).toEqual(['done']);
    expect(comments).toBeDefined();
    // The first (abandoned) answer was cancelled in the agent, long before its model reply was due.
    expect(cancelled()).toBe(before + 1);
    const line = readFileSync(agentLog, 'utf8')
      .split('\n')
      .filter((l) => l.includes('cancelled by the caller'))
      .map((l) => JSON.parse(l))[before];
    expect(line.ms).toBeLessThan(3000);
    expect(Date.now() - started).toBeGreaterThan(5000);
  });

  it('a model failure after the stream began is an error event; before any output the JSON path maps it to 503', async () => {
    const { events } = await streamChat({ chat_type: 'safety', messages: [{ role: 'user', content: 'BROKEN: scaffold?' }] });
    expect(events.map((e) => e.event)).toEqual(['meta', 'error']);
    expect(JSON.parse(events[1].data).code).toBe('SERVICE_UNAVAILABLE');
    const res = await api(org.key, baseUrl).post('/api/v2/agent/query').send({ question: 'BROKEN: scaffold?', chat_type: 'safety' });
    expect([res.status, res.body.error.code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
  });

  /** AGENT_BATCH_CONCURRENCY of this stack: questions one agent process answers at once. */
  const CONCURRENCY = 2;
  const agentPid = () => JSON.parse(readFileSync(path.join(dir, 'stack', 'pids.json'), 'utf8')).agent as number;
  const agentLog = () => path.join(dir, 'stack', 'logs', 'agent.log');

  /** Polls the batch until it is `completed` (at most 150 s). */
  async function completedBatch(id: string): Promise<any> {
    for (let i = 0; i < 600; i++) {
      const r = await api(org.key, baseUrl).get(`/api/v2/agent/batches/${id}`);
      if (r.status === 200 && r.body.data.status === 'completed') return r.body.data;
      await new Promise((res) => setTimeout(res, 250));
    }
    throw new Error(`batch ${id} did not complete`);
  }

  /** A SIGKILL of the agent: the killed pid, when (ms), when the launcher's restart was seen, and the questions finished before. */
  interface Kill {
    pid: number;
    at: number;
    /**
     * When the restarted process's pid was first seen (polled every 50 ms). Until then no agent process
     * runs, so a model call stamped between `at` and this was sent by the killed process: its request
     * was still on its way to the scripted model (parsed in this process's event loop) as the kill landed.
     */
    restartedAt: number;
    finished: Set<string>;
  }

  /**
   * SIGKILLs the agent process and waits for the launcher to restart it; returns when, and which
   * questions the batch had already finished just before (read from the database: the API needs the
   * agent, which may still be starting).
   */
  async function killAgent(batchId: string): Promise<Kill> {
    const db = new PgClient({ connectionString: databaseUrl });
    await db.connect();
    let kill: Omit<Kill, 'restartedAt'>;
    try {
      const { rows } = await db.query(`SELECT question FROM agent.batch_questions WHERE batch_id = $1 AND status <> 'pending'`, [batchId]);
      const pid = agentPid();
      const at = Date.now();
      process.kill(pid, 'SIGKILL');
      kill = { pid, at, finished: new Set(rows.map((r) => r.question as string)) };
    } finally {
      await db.end();
    }
    for (let i = 0; i < 600 && agentPid() === kill.pid; i++) await new Promise((r) => setTimeout(r, 50));
    expect(agentPid()).not.toBe(kill.pid);
    return { ...kill, restartedAt: Date.now() };
  }

  /** Waits until the model has been asked one of `questions` (an answer is in flight). */
  async function untilAsked(questions: string[]): Promise<void> {
    const asked = () => crashCalls.some((c) => questions.some((q) => c.question.includes(q)));
    for (let i = 0; i < 300 && !asked(); i++) await new Promise((r) => setTimeout(r, 50));
    expect(asked()).toBe(true);
  }

  /**
   * What the kills cost, from the model's side (its answer calls for `questions`): no question
   * finished before a kill is asked again after it; at most CONCURRENCY questions (those in flight)
   * are asked again across each kill. Prints the repeats and, for each question asked again, the
   * pause between the kill that interrupted it and the model being asked it again (the takeover).
   * @returns the number of repeated answer calls and the longest takeover (ms).
   */
  function assessKills(label: string, questions: string[], kills: Kill[]): { repeats: number; longestTakeoverMs: number } {
    const callsOf = new Map(questions.map((q) => [q, crashCalls.filter((c) => c.question.includes(q)).map((c) => c.at)]));
    const takeovers: number[] = [];
    /** Per kill, the questions asked again because it interrupted them; and repeats no kill explains. */
    const interrupted = kills.map(() => [] as string[]);
    const unexplained: string[] = [];
    for (const [q, calls] of callsOf) {
      for (let i = 1; i < calls.length; i++) {
        // The kill that interrupted the previous call: the first whose killed process made it (the
        // call came before the restart), and that came before this call.
        const k = kills.findIndex((kill) => kill.restartedAt >= calls[i - 1] && kill.at <= calls[i]);
        if (k < 0) unexplained.push(q);
        else {
          interrupted[k].push(q);
          takeovers.push(calls[i] - kills[k].at);
        }
      }
    }
    const repeats = [...callsOf.values()].reduce((n, calls) => n + Math.max(0, calls.length - 1), 0);
    const longestTakeoverMs = takeovers.length > 0 ? Math.max(...takeovers) : 0;
    // Printed, not asserted (no timed assertions); README "Crash recovery" keeps the measured figures.
    console.log(
      `${label}: ${repeats} repeated answer call(s) for ${questions.length} questions (per kill: ${interrupted.map((q) => q.length).join(', ')}); ` +
        `takeover pauses (kill → the model asked the interrupted question again): ${takeovers.map((t) => `${t} ms`).join(', ') || 'none'}`,
    );
    expect(questions.filter((q) => callsOf.get(q)!.length === 0)).toEqual([]);
    expect(unexplained).toEqual([]);
    kills.forEach((kill, k) => {
      // A question finished before a kill is never asked again; at most the CONCURRENCY in flight are.
      expect(questions.filter((q) => kill.finished.has(q) && callsOf.get(q)!.some((t) => t > kill.at))).toEqual([]);
      expect(interrupted[k].length).toBeLessThanOrEqual(CONCURRENCY);
    });
    return { repeats, longestTakeoverMs };
  }

  it('a batch survives its worker being killed mid-batch; a question the model rejects is recorded as failed', async () => {
    const questions = [...Array.from({ length: 6 }, (_, i) => `CRASH ${i}: how high are guardrails?`), 'FAIL: guardrails?'];
    const a = api(org.key, baseUrl);
    const b = (await a.post('/api/v2/agent/batches').send({ questions, chat_type: 'safety' })).body.data;
    // Kill the agent while answers are in flight (each model answer takes 1.5 s).
    await untilAsked(questions.slice(0, 6));
    const logFrom = readFileSync(agentLog()).length;
    const kill = await killAgent(b.id);
    const done = await completedBatch(b.id);
    expect(agentPid()).not.toBe(kill.pid);
    expect([done.total_questions, done.processed_questions, done.failed_questions]).toEqual([7, 7, 1]);
    expect(done.results.slice(0, 6).map((r: any) => [r.status, r.answer])).toEqual(Array(6).fill(['completed', 'Guardrails are 42 inches high [1].']));
    expect(done.results[6].status).toBe('failed');
    expect(done.results[6].error).toMatch(/model/i);
    // Only the questions in flight at the kill were asked of the model again (a repeat is a paid call).
    assessKills('batch, one kill', questions.slice(0, 6), [kill]);
    // The takeover pause (kill → a worker starts a redelivered question): printed, not asserted (no
    // timed assertions); docs/agent.md keeps the measured figure.
    const redelivered = readFileSync(agentLog())
      .subarray(logFrom)
      .toString('utf8')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'answering batch question' && l.batch_id === b.id && l.attempt >= 2);
    expect(redelivered.length).toBeGreaterThan(0);
    console.log(`takeover pause (batch, worker killed mid-batch): ${Math.min(...redelivered.map((l) => Date.parse(l.time))) - kill.at} ms`);
  });

  it('four kills of the batch worker within 10 s: every interrupted question is taken over, and only those are asked twice', async () => {
    const questions = Array.from({ length: 16 }, (_, i) => `CRASH x${i}: how high are guardrails?`);
    const b = (await api(org.key, baseUrl).post('/api/v2/agent/batches').send({ questions, chat_type: 'safety' })).body.data;
    await untilAsked(questions);
    // Kills 3.2 s apart (0, 3.2, 6.4, 9.6 s), each of the agent process running then (the launcher
    // restarts it 0.5, 1 and 2 s after the first three).
    const kills: Kill[] = [];
    for (let k = 0; k < 4; k++) {
      if (k > 0) {
        while (Date.now() < kills[0].at + 3200 * k) await new Promise((r) => setTimeout(r, 50));
      }
      kills.push(await killAgent(b.id));
    }
    expect(kills[3].at - kills[0].at).toBeLessThan(10_000);
    const done = await completedBatch(b.id);
    expect([done.total_questions, done.processed_questions, done.failed_questions]).toEqual([16, 16, 0]);
    expect(done.results.every((r: any) => r.status === 'completed' && r.answer === 'Guardrails are 42 inches high [1].')).toBe(true);
    const { longestTakeoverMs } = assessKills('batch, four kills in 10 s', questions, kills);
    console.log(
      `takeover pause (batch, four kills in 10 s): the longest ${longestTakeoverMs} ms; the batch completed ${Date.now() - kills[3].at} ms after the last kill`,
    );
  });
});
