import Ajv from 'ajv';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { DataSource } from 'typeorm';
import { openGatewayDatabase } from '../../apps/gateway/src/database/database';
import { UsageService } from '../../apps/gateway/src/usage/usage.service';
import { UsageRepository } from '../../apps/gateway/src/usage/usage.repository';
import { api, newOrg, ROOT, streamChat, uploadFile, waitForDocument, type ExtraStack, llmEnv, startExtraStack } from './support/harness';
import { REAL_MODEL_NAME, realModelUnavailable, startRealModelServer, type RealModelServer } from './support/real-model';

jest.setTimeout(600_000);

const PLAN = `Harbor Point Site Safety Plan

Visitors must sign in at the reception desk before entering the site.
Hard hats are required at all times in the construction zone.
Smoking is prohibited on site.
Guardrails on the scaffolds are 42 inches high.
Fire extinguishers are inspected every month by the site manager.
`;
const SAMPLES = path.join(ROOT, 'samples/safety-corpus');
const norm = (s: string) => s.replace(/\s+/g, ' ').trim();
/** Every text a citation or evidence may come from: the uploaded plan and the sample safety corpus. */
const SOURCE_TEXT = norm([PLAN, ...readdirSync(SAMPLES).map((f) => readFileSync(path.join(SAMPLES, f), 'utf8'))].join('\n'));

const unavailable = realModelUnavailable();
if (unavailable) process.stderr.write(`real-model.e2e-spec: skipped: ${unavailable}\n`);
const describeReal = unavailable ? describe.skip : describe;

/**
 * The model-provider path against a REAL model: tools/llm-server (node-llama-cpp, CPU) serving
 * SmolLM2-135M-Instruct over the OpenAI chat-completions protocol, and a stack configured with
 * `LLM_BASE_URL` pointing at it. The model is tiny and says what it says; the tests assert what
 * must hold whatever it says: envelopes and statuses, verbatim evidence or a confidence below 0.7,
 * verbatim citation quotes, token usage reported by the model and counted against the org's monthly
 * quota, the order of streamed events, schema-valid structured output. Faults (429, 5xx, malformed
 * output, timeouts) stay with the scripted server (check-model / agent-model specs).
 */
describeReal('the model-provider path against a real small model', () => {
  let dir: string;
  let llm: RealModelServer | undefined;
  let stack: ExtraStack | undefined;
  let baseUrl: string;
  let databaseUrl: string;
  let accounts: DataSource | undefined;
  let org: { orgId: string; key: string };
  let projectId: string;
  let docId: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'kb-e2e-real-model-'));
    llm = await startRealModelServer();
    // Short completions keep the suite quick on 2 cores (a looping answer stops at 96 tokens).
    const env = {
      ...llmEnv(llm.baseUrl, REAL_MODEL_NAME, { apiKey: 'none', maxRetries: 1 }),
      LLM_MAX_TOKENS: '96',
      CHECK_RUN_GROUP_SIZE: '2',
      AGENT_BATCH_CONCURRENCY: '1',
    };
    stack = await startExtraStack(path.join(dir, 'stack'), env);
    ({ baseUrl, databaseUrl } = stack);
    accounts = await openGatewayDatabase(databaseUrl);
    org = newOrg('Real Model Org', { safety: true, databaseUrl });
    execFileSync(process.execPath, [path.join(ROOT, 'dist/apps/gateway/src/cli/kbctl.js'), 'safety', 'load', SAMPLES, '--json'], {
      env: { ...process.env, DATABASE_URL: databaseUrl, KB_DATA_DIR: path.join(dir, 'stack') },
      encoding: 'utf8',
    });
    const a = api(org.key, baseUrl);
    projectId = (await a.post('/api/v2/projects').send({ name: 'Harbor Point' })).body.data.id;
    docId = await uploadFile(org.key, { bytes: Buffer.from(PLAN), name: 'plan.txt', contentType: 'text/plain' }, projectId, baseUrl);
    await a.post('/api/v2/documents/process').send({ document_ids: [docId] });
    expect((await waitForDocument(org.key, docId, 180_000, baseUrl)).status).toBe('completed');
  });

  afterAll(async () => {
    await accounts?.destroy();
    await stack?.stop();
    await llm?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  /** The org's token counter of this month (what the monthly token quota is checked against). */
  const tokensUsed = async (orgId: string) => (await new UsageService(new UsageRepository(accounts!)).usage(orgId)).tokens;

  /** Waits until the org's token counter reaches `atLeast` (usage events are consumed asynchronously). */
  async function tokensReach(orgId: string, atLeast: number): Promise<number> {
    for (let i = 0; i < 200; i++) {
      const t = await tokensUsed(orgId);
      if (t >= atLeast) return t;
      await new Promise((r) => setTimeout(r, 100));
    }
    return tokensUsed(orgId);
  }

  /**
   * What holds for any answer of the model: every citation is named by a marker of the answer, once,
   * and its quote is verbatim source text.
   */
  function expectGroundedAnswer(answer: string, citations: any[]) {
    expect(typeof answer).toBe('string');
    const markers = new Set([...answer.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1])));
    const indexes = citations.map((c) => c.index);
    expect(new Set(indexes).size).toBe(indexes.length);
    for (const i of indexes) expect(markers.has(i)).toBe(true);
    for (const c of citations) expect(SOURCE_TEXT).toContain(norm(c.quote));
  }

  function expectConfidenceIfPresent(data: any) {
    // `confidence` on answers comes with the answerability work; when present it is a probability.
    if (data.confidence !== undefined) {
      expect(data.confidence).toBeGreaterThanOrEqual(0);
      expect(data.confidence).toBeLessThanOrEqual(1);
    }
  }

  it('the tooling server enforces a JSON schema (response_format json_schema) and reports real token usage', async () => {
    const schema = {
      type: 'object',
      additionalProperties: false,
      required: ['verdict', 'confidence', 'evidence', 'recommendation'],
      properties: {
        verdict: { type: 'string', enum: ['COMPLIANT', 'CONTRADICTS', 'NOT_FOUND'] },
        confidence: { type: 'number' },
        evidence: { type: 'string' },
        recommendation: { type: ['string', 'null'] },
      },
    };
    const res = await fetch(`${llm!.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: REAL_MODEL_NAME,
        temperature: 0,
        max_tokens: 120,
        messages: [{ role: 'user', content: `Does "Smoking is prohibited on site." satisfy "Smoking must not be allowed"? Answer in JSON.` }],
        response_format: { type: 'json_schema', json_schema: { name: 'verdict', schema } },
      }),
    });
    expect(res.status).toBe(200);
    const body: any = await res.json();
    expect(body).toMatchObject({ object: 'chat.completion', model: REAL_MODEL_NAME, choices: [{ index: 0, message: { role: 'assistant' } }] });
    if (body.choices[0].finish_reason === 'stop') {
      const value = JSON.parse(body.choices[0].message.content);
      expect(new Ajv().validate(schema, value)).toBe(true);
    }
    expect(body.usage.prompt_tokens).toBeGreaterThan(10);
    expect(body.usage.completion_tokens).toBeGreaterThan(0);
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + body.usage.completion_tokens);
    // An unknown model is refused in OpenAI's error format.
    const wrong = await fetch(`${llm!.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(wrong.status).toBe(404);
    expect(((await wrong.json()) as any).error).toMatchObject({ code: 'model_not_found', type: 'invalid_request_error' });
  });

  it('verify: the model judges; evidence is verbatim from the document or the confidence stays below 0.7; tokens count against the quota', async () => {
    const { orgId, key } = newOrg('Verify Org', { databaseUrl });
    const a = api(key, baseUrl);
    const project = (await a.post('/api/v2/projects').send({ name: 'Verify' })).body.data.id;
    const doc = await uploadFile(key, { bytes: Buffer.from(PLAN), name: 'plan.txt', contentType: 'text/plain' }, project, baseUrl);
    await a.post('/api/v2/documents/process').send({ document_ids: [doc] });
    expect((await waitForDocument(key, doc, 180_000, baseUrl)).status).toBe('completed');
    expect(await tokensUsed(orgId)).toBe(0);

    for (const requirement of ['Visitors must sign in at the reception desk.', 'Smoking is allowed on site.']) {
      const res = await a.post('/api/v2/check/verify').send({ project_id: project, requirement });
      expect(res.status).toBe(200);
      expect(res.body.success).toBe(true);
      const v = res.body.data;
      expect(['COMPLIANT', 'CONTRADICTS', 'NOT_FOUND']).toContain(v.verdict);
      expect(v.confidence).toBeGreaterThanOrEqual(0);
      expect(v.confidence).toBeLessThanOrEqual(1);
      expect(typeof v.explanation).toBe('string');
      expect(v.explanation.length).toBeGreaterThan(0);
      if (v.verdict === 'COMPLIANT') expect(v.recommendation).toBeNull();
      else expect(typeof v.recommendation).toBe('string');
      // The verbatim-evidence check: shown evidence is always document text (of the handbook and
      // source named), and a verdict the evidence does not back is never confident.
      if (v.evidence) {
        expect(norm(PLAN)).toContain(norm(v.evidence));
        expect(v.handbook).toEqual({ id: doc, name: 'plan.txt' });
        expect(v.sources.map((x: any) => x.handbook_id)).toContain(doc);
      }
      if (v.verdict !== 'NOT_FOUND' && v.confidence >= 0.7) expect(v.evidence).toBeTruthy();
    }
    // Every model call was counted against the org's monthly token quota.
    expect(await tokensReach(orgId, 1)).toBeGreaterThan(0);
  });

  it('a check run with the model breaking requirements down runs to completion with consistent counters', async () => {
    const a = api(org.key, baseUrl);
    const before = await tokensUsed(org.orgId);
    const run = (
      await a.post('/api/v2/check/runs').send({
        project_id: projectId,
        name: 'Real model run',
        requirements: [{ text: 'Visitors must sign in at the reception desk and wear hard hats.' }, { text: 'Smoking is allowed on site.' }],
      })
    ).body.data;
    expect(run).toMatchObject({ status: 'pending', total_requirements: 2, processed_requirements: 0 });
    const trigger = await a.post(`/api/v2/check/runs/${run.id}/trigger`).send({});
    expect(trigger.status).toBe(200);
    expect(trigger.body.data).toMatchObject({ run_id: run.id, status: 'processing' });
    let done: any;
    for (let i = 0; i < 2400 && !done; i++) {
      const r = (await a.get(`/api/v2/check/runs/${run.id}`)).body.data;
      if (['completed', 'failed', 'stopped'].includes(r.status)) done = r;
      else await new Promise((res) => setTimeout(res, 250));
    }
    expect(done).toMatchObject({ status: 'completed', total_requirements: 2, processed_requirements: 2, error_message: null });
    expect(done.passed_requirements + done.failed_requirements).toBe(2);
    expect(done.processing_completed_at).toEqual(expect.any(String));
    for (const req of done.requirements) {
      expect(req.status).toBe('completed');
      // The model's breakdown: at least one part, each a non-empty sentence with a verdict.
      expect(req.sub_requirements.length).toBeGreaterThanOrEqual(1);
      expect(req.sub_requirements.length).toBeLessThanOrEqual(20);
      for (const sub of req.sub_requirements) {
        expect(sub.text.trim().length).toBeGreaterThan(0);
        expect(['comply', 'not-comply']).toContain(sub.status);
        expect(sub.score).toBeGreaterThanOrEqual(0);
        expect(sub.score).toBeLessThanOrEqual(1);
        expect(typeof sub.justification).toBe('string');
      }
    }
    // A requirement passes only when every part complies.
    const passed = done.requirements.filter((r: any) => r.sub_requirements.every((s: any) => s.status === 'comply')).length;
    expect(done.passed_requirements).toBe(passed);
    expect(await tokensReach(org.orgId, before + 1)).toBeGreaterThan(before);
  });

  it('query and a follow-up chat: the model routes, rewrites and answers; citations are verbatim; usage is exactly the quota charge', async () => {
    const { orgId, key } = newOrg('Query Org', { safety: true, databaseUrl });
    const a = api(key, baseUrl);
    const project = (await a.post('/api/v2/projects').send({ name: 'Query' })).body.data.id;
    const doc = await uploadFile(key, { bytes: Buffer.from(PLAN), name: 'plan.txt', contentType: 'text/plain' }, project, baseUrl);
    await a.post('/api/v2/documents/process').send({ document_ids: [doc] });
    expect((await waitForDocument(key, doc, 180_000, baseUrl)).status).toBe('completed');

    const res = await a.post('/api/v2/agent/query').send({ question: 'How high are the guardrails on the scaffolds?', top_k: 3 });
    expect(res.status).toBe(200);
    const d = res.body.data;
    expect(d.model).toBe(REAL_MODEL_NAME);
    expectGroundedAnswer(d.answer, d.citations);
    expectConfidenceIfPresent(d);
    expect(d.usage.prompt_tokens).toBeGreaterThan(0);
    expect(d.usage.completion_tokens).toBeGreaterThan(0);
    expect(d.usage.total_tokens).toBe(d.usage.prompt_tokens + d.usage.completion_tokens);
    // The org was charged exactly what the response reports (a fresh org: the route and answer calls
    // of this query are its only model use).
    expect(await tokensReach(orgId, d.usage.total_tokens)).toBe(d.usage.total_tokens);

    // A follow-up: the model routes it and rewrites it into a stand-alone query (two JSON-schema
    // calls), then answers; `usage` sums the three calls and is what the org is charged.
    const follow = await a.post('/api/v2/chat').send({
      project_id: project,
      top_k: 3,
      messages: [
        { role: 'user', content: 'Tell me about the scaffolds.' },
        { role: 'assistant', content: 'Guardrails on the scaffolds are 42 inches high [1].' },
        { role: 'user', content: 'And who inspects the fire extinguishers?' },
      ],
    });
    expect(follow.status).toBe(200);
    const f = follow.body.data;
    expect(['project', 'safety']).toContain(f.agent);
    expect(f.model).toBe(REAL_MODEL_NAME);
    expect(f.message.role).toBe('assistant');
    expectGroundedAnswer(f.message.content, f.citations);
    expectConfidenceIfPresent(f);
    expect(f.usage.total_tokens).toBe(f.usage.prompt_tokens + f.usage.completion_tokens);
    const charged = d.usage.total_tokens + f.usage.total_tokens;
    expect(await tokensReach(orgId, charged)).toBe(charged);

    // Over the token quota: the call that crossed it completed, the next one is refused.
    const nats = `nats://127.0.0.1:${JSON.parse(readFileSync(path.join(dir, 'stack', 'stack.json'), 'utf8')).ports.nats}`;
    execFileSync(
      process.execPath,
      [path.join(ROOT, 'dist/apps/gateway/src/cli/kbctl.js'), 'org', 'quota', '--org', orgId, '--tokens', String(charged), '--json'],
      {
        env: { ...process.env, DATABASE_URL: databaseUrl, NATS_URL: nats },
        encoding: 'utf8',
      },
    );
    // (kbctl announces the change; each gateway drops its cached key lookup within a second.)
    for (let i = 0; i < 50 && (await a.get('/api/v2/projects')).status !== 402; i++) await new Promise((r) => setTimeout(r, 100));
    const over = await a.post('/api/v2/agent/query').send({ question: 'Who inspects the fire extinguishers?' });
    expect(over.status).toBe(402);
    expect(over.body.error.code).toBe('QUOTA_EXCEEDED');
    expect(over.body.error.message).toContain(`token quota of ${charged}`);
  });

  it('chat streamed as SSE: meta, deltas, citations, done with the usage, in that order', async () => {
    const { res, events } = await streamChat(
      org.key,
      { chat_type: 'project', project_id: projectId, top_k: 3, messages: [{ role: 'user', content: 'Who inspects the fire extinguishers?' }] },
      {},
      baseUrl,
    );
    expect(res.status).toBe(200);
    const names = events.map((e) => e.event);
    expect(names[0]).toBe('meta');
    expect(names.slice(-2)).toEqual(['citations', 'done']);
    expect(names.slice(1, -2).every((n) => n === 'delta')).toBe(true);
    expect(names.filter((n) => n === 'delta').length).toBeGreaterThan(1);
    expect(JSON.parse(events[0].data)).toMatchObject({ agent: 'project', model: REAL_MODEL_NAME });
    const text = events
      .filter((e) => e.event === 'delta')
      .map((e) => JSON.parse(e.data).content)
      .join('');
    const { citations } = JSON.parse(events[names.length - 2].data);
    expectGroundedAnswer(text, citations);
    const done = JSON.parse(events[names.length - 1].data);
    expect(done.usage.completion_tokens).toBeGreaterThan(0);
    expect(done.usage.total_tokens).toBe(done.usage.prompt_tokens + done.usage.completion_tokens);
    expect(['stop', 'length']).toContain(done.finish_reason);
  });

  it('a batch is answered by the model, every question completed with grounded citations, and exports as CSV', async () => {
    const a = api(org.key, baseUrl);
    const questions = ['Where must visitors sign in?', 'Is smoking allowed on site?'];
    const created = await a.post('/api/v2/agent/batches').send({ questions, chat_type: 'project', project_id: projectId });
    expect(created.status).toBe(201);
    let done: any;
    for (let i = 0; i < 2400 && !done; i++) {
      const r = (await a.get(`/api/v2/agent/batches/${created.body.data.id}`)).body.data;
      if (r.status === 'completed' || r.status === 'failed') done = r;
      else await new Promise((res) => setTimeout(res, 250));
    }
    expect(done).toMatchObject({ status: 'completed', total_questions: 2, processed_questions: 2, failed_questions: 0 });
    expect(done.results.map((r: any) => [r.question, r.status, r.error])).toEqual(questions.map((q) => [q, 'completed', null]));
    for (const r of done.results) {
      expectGroundedAnswer(r.answer, r.citations);
      expectConfidenceIfPresent(r);
    }
    const csv = await a.get(`/api/v2/agent/batches/${created.body.data.id}/export`);
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
  });
});
