import { startScriptedOpenAiServer, type ScriptedOpenAiServer, type ScriptedReply, type ScriptedRequestBody } from '@kb/models/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { api, newOrg, uploadFile, waitForDocument, ExtraStack, llmEnv, startExtraStack } from './support/harness';

jest.setTimeout(300_000);

const PLAN = `Harbor Point Site Safety Plan

Visitors must sign in at the reception desk before entering the site.
Hard hats are required at all times in the construction zone.
Smoking is prohibited on site.
`;
const norm = (s: string) => s.replace(/\s+/g, ' ').trim();

/**
 * Faults of the model-configured check service, over real HTTP against a scripted server that
 * speaks the OpenAI protocol (what a real model cannot be made to do on demand): quotes with wrong
 * whitespace are made verbatim in code, an invented quote lowers the confidence below 0.7, and an
 * unreachable provider fails a run (keeping the finished requirements) and turns verify into 503.
 * The working path (judging, breakdown, runs, token usage) runs against a real model in
 * real-model.e2e-spec.ts. A second stack is started with LLM_BASE_URL.
 */
describe('compliance checking with a configured chat model', () => {
  let server: ScriptedOpenAiServer;
  let mode: 'ok' | 'invent' | 'down' = 'ok';
  let judgeCallsBeforeDown = Infinity;
  let judgeCalls = 0;
  let dir: string;
  let stack: ExtraStack | undefined;
  let baseUrl: string;
  let databaseUrl: string;

  /** A deterministic "model" (runs skip the breakdown): finds the passage sentence sharing the requirement's key word. */
  function respond(body: ScriptedRequestBody): ScriptedReply {
    const user = body.messages[body.messages.length - 1].content;
    judgeCalls++;
    if (mode === 'down' || judgeCalls > judgeCallsBeforeDown) return { status: 503, content: 'overloaded' };
    const requirement = user.split('\n')[1];
    const word = /smok/i.test(requirement) ? 'Smoking' : /hard hat/i.test(requirement) ? 'Hard hats' : /sign in/i.test(requirement) ? 'Visitors' : null;
    const sentence = word ? user.split('\nPassages:\n')[1].match(new RegExp(`${word}[^.]*\\.`))?.[0] : undefined;
    if (!sentence)
      return {
        content: JSON.stringify({ verdict: 'NOT_FOUND', confidence: 0.8, passage: 0, evidence: '', explanation: 'Not covered.', recommendation: null }),
      };
    const verdict = /allowed/i.test(requirement) ? 'CONTRADICTS' : 'COMPLIANT';
    // Quote with doubled spaces (must be normalised), or an invented sentence (must lower the confidence).
    const evidence = mode === 'invent' ? 'Every visitor receives a badge at the gate.' : sentence.replace(/ /g, '  ');
    return {
      content: JSON.stringify({
        verdict,
        confidence: 0.9,
        passage: 1,
        evidence,
        explanation: 'The plan says so.',
        recommendation: verdict === 'COMPLIANT' ? null : 'Align the plan.',
      }),
      usage: { prompt_tokens: 200, completion_tokens: 30, total_tokens: 230 },
    };
  }

  beforeAll(async () => {
    server = await startScriptedOpenAiServer((body) => respond(body));
    dir = mkdtempSync(path.join(os.tmpdir(), 'kb-e2e-model-'));
    const env = {
      ...llmEnv(server.baseUrl, 'scripted-judge'),
      CHECK_RUN_ACK_WAIT_MS: '5000',
      CHECK_RUN_GROUP_SIZE: '1',
      CHECK_RUN_CONCURRENCY: '1',
    };
    stack = await startExtraStack(path.join(dir, 'stack'), env);
    ({ baseUrl, databaseUrl } = stack);
  });

  afterAll(async () => {
    await stack?.stop();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  async function waitForRun(key: string, id: string, statuses: string[]): Promise<any> {
    for (let i = 0; i < 600; i++) {
      const run = (await api(key, baseUrl).get(`/api/v2/check/runs/${id}`)).body.data;
      if (statuses.includes(run.status)) return run;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`run ${id} did not reach ${statuses}`);
  }

  it('repairs malformed quotes, distrusts invented ones, and fails a run when the provider goes down', async () => {
    const { key } = newOrg('Model Org', { databaseUrl });
    const a = api(key, baseUrl);
    const projectId = (await a.post('/api/v2/projects').send({ name: 'Harbor' })).body.data.id;
    const docId = await uploadFile(key, { bytes: Buffer.from(PLAN), name: 'plan.txt', contentType: 'text/plain' }, projectId, baseUrl);
    await a.post('/api/v2/documents/process').send({ document_ids: [docId] });
    expect((await waitForDocument(key, docId, 120_000, baseUrl)).status).toBe('completed');

    // Verify: the model's quote (with doubled spaces) comes back verbatim from the chunk.
    const ok = (await a.post('/api/v2/check/verify').send({ project_id: projectId, requirement: 'Visitors must sign in at the reception desk.' })).body.data;
    expect(ok).toMatchObject({ verdict: 'COMPLIANT', confidence: 0.9, recommendation: null, handbook: { id: docId, name: 'plan.txt' } });
    expect(ok.evidence).toBe('Visitors must sign in at the reception desk before entering the site.');
    const contra = (await a.post('/api/v2/check/verify').send({ project_id: projectId, requirement: 'Smoking is allowed on site.' })).body.data;
    expect(contra).toMatchObject({ verdict: 'CONTRADICTS', evidence: 'Smoking is prohibited on site.', recommendation: 'Align the plan.' });

    // An invented quote: the shown evidence is still document text, and the confidence drops below 0.7.
    mode = 'invent';
    const invented = (await a.post('/api/v2/check/verify').send({ project_id: projectId, requirement: 'Visitors must sign in at the reception desk.' })).body
      .data;
    expect(invented.confidence).toBeLessThan(0.7);
    expect(norm(PLAN)).toContain(norm(invented.evidence));
    mode = 'ok';

    // The provider goes down after a few judgements: the run fails, keeping finished requirements.
    const many = (
      await a.post('/api/v2/check/runs').send({
        project_id: projectId,
        name: 'Outage',
        requirements: Array.from({ length: 12 }, (_, i) => ({ text: `Visitors must sign in at the reception desk (${i}).` })),
      })
    ).body.data;
    judgeCalls = 0;
    judgeCallsBeforeDown = 4;
    await a.post(`/api/v2/check/runs/${many.id}/trigger`).send({ skip_breakdown: true });
    const failed = await waitForRun(key, many.id, ['failed', 'completed']);
    expect(failed.status).toBe('failed');
    expect(failed.error_message).toMatch(/model provider/i);
    expect(failed.processed_requirements).toBe(4);
    expect(failed.requirements.filter((r: any) => r.status === 'completed')).toHaveLength(4);
    expect(failed.requirements.filter((r: any) => r.status === 'processing')).toEqual([]);
    expect(failed.processing_completed_at).toEqual(expect.any(String));

    // Verify answers 503 while the provider is down.
    mode = 'down';
    const down = await a.post('/api/v2/check/verify').send({ project_id: projectId, requirement: 'Visitors must sign in.' });
    expect(down.status).toBe(503);
    expect(down.body.error.code).toBe('SERVICE_UNAVAILABLE');

    // Back up: trigger resumes the failed run and checks only what is left.
    mode = 'ok';
    judgeCalls = 0;
    judgeCallsBeforeDown = Infinity;
    expect((await a.post(`/api/v2/check/runs/${many.id}/trigger`).send({ skip_breakdown: true })).body.data.status).toBe('processing');
    const resumed = await waitForRun(key, many.id, ['completed', 'failed']);
    expect(resumed).toMatchObject({ status: 'completed', processed_requirements: 12, passed_requirements: 12, error_message: null });
    expect(judgeCalls).toBe(8);
  });
});
