import { chatModelFromEnv, ModelProviderError } from '@kb/models';
import { startScriptedOpenAiServer, type ScriptedOpenAiServer, type ScriptedReply } from '@kb/models/testing';
import type { PassageInput } from '@kb/text';
import { EmbeddedJudge } from './judges';
import { ModelJudge, UNSUPPORTED_CONFIDENCE_CAP } from './model-judge';

const passage = (id: string, text: string, page: number | null = null): PassageInput => ({
  chunkId: id,
  documentId: `doc-${id}`,
  fileName: `${id}.pdf`,
  text,
  startPage: page,
  endPage: page,
  pageSpans: [],
  score: 1,
});

const PLAN = passage('plan', 'Site rules.\nSmoking is   prohibited\non site. Guardrails shall be 42 inches high.', 3);
const OTHER = passage('other', 'Visitors must sign in at the reception desk.', 7);

describe('ModelJudge (scripted OpenAI-compatible server)', () => {
  let server: ScriptedOpenAiServer;
  let next: ScriptedReply[] = [];
  const judge = () =>
    new ModelJudge(
      chatModelFromEnv({ LLM_BASE_URL: server.baseUrl, LLM_MODEL: 'judge-1', LLM_API_KEY: 'k', LLM_MAX_RETRIES: '0', LLM_TIMEOUT_MS: '5000' })!,
      new EmbeddedJudge(),
    );
  const answer = (o: object): ScriptedReply => ({ content: JSON.stringify(o), usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 } });

  beforeAll(async () => {
    server = await startScriptedOpenAiServer(() => next.shift() ?? { status: 500, content: 'script exhausted' });
  });
  afterAll(() => server.close());
  beforeEach(() => {
    next = [];
    server.requests.length = 0;
  });

  it('gives the model what must be true without the framing, and the section of each passage', async () => {
    next.push(answer({ verdict: 'NOT_FOUND', confidence: 0.5, passage: 0, evidence: '', explanation: 'Not stated.', recommendation: 'Add it.' }));
    const policy = { ...OTHER, section: 'Access > Visitors' };
    await judge().judge('Implement procedures to control and validate visitor access to facilities.', [policy]);
    const body = JSON.stringify(server.requests.at(-1));
    expect(body).toContain('What must be true (without the framing \\"Implement procedures to\\")');
    expect(body).toContain('Control and validate visitor access to facilities.');
    expect(body).toContain('(section: Access > Visitors)');
    expect(body).toContain('is not content the documents must repeat');
  });

  it('keeps a quote that is verbatim up to whitespace, with the quote’s own passage and usage', async () => {
    next.push(
      answer({
        verdict: 'CONTRADICTS',
        confidence: 0.92,
        passage: 1,
        evidence: 'Smoking is prohibited on site.',
        explanation: 'Prohibited.',
        recommendation: 'Allow it.',
      }),
    );
    const { judgement, calls } = await judge().judge('Smoking is allowed on site.', [PLAN, OTHER]);
    expect(judgement.verdict).toBe('CONTRADICTS');
    expect(judgement.confidence).toBe(0.92);
    expect(judgement.evidence!.passage).toBe(PLAN);
    expect(judgement.evidence!.quote).toBe('Smoking is   prohibited\non site.');
    expect(PLAN.text.slice(judgement.evidence!.start, judgement.evidence!.end)).toBe(judgement.evidence!.quote);
    expect(judgement.evidence!.startPage).toBe(3);
    expect(calls).toEqual([{ model: expect.any(String), usage: { promptTokens: 100, completionTokens: 20, totalTokens: 120 } }]);
    // The model saw the requirement, numbered passages, and a JSON schema.
    const req = server.requests[0];
    expect(req.messages[1].content).toContain('[2] other.pdf, page 7');
    expect(JSON.stringify(req.response_format)).toContain('compliance_verdict');
  });

  it('finds a verbatim quote in another passage when the citation number is wrong', async () => {
    next.push(
      answer({
        verdict: 'COMPLIANT',
        confidence: 0.9,
        passage: 1,
        evidence: 'Visitors must sign in at the reception desk.',
        explanation: 'ok',
        recommendation: null,
      }),
    );
    const { judgement } = await judge().judge('Visitors must sign in.', [PLAN, OTHER]);
    expect(judgement.evidence!.passage).toBe(OTHER);
    expect(judgement.recommendation).toBeNull();
  });

  it('repairs a paraphrased quote to the chunk sentence it paraphrases', async () => {
    next.push(
      answer({ verdict: 'COMPLIANT', confidence: 0.85, passage: 1, evidence: 'guardrails are 42 inches high', explanation: 'Meets it.', recommendation: null }),
    );
    const { judgement } = await judge().judge('Guardrails must be 42 inches high.', [PLAN, OTHER]);
    expect(judgement.evidence!.quote).toBe('Guardrails shall be 42 inches high.');
    expect(judgement.confidence).toBe(0.85);
    expect(judgement.explanation).toContain('paraphrased');
  });

  it('drops the confidence below 0.7 when the quote is nowhere in the passages', async () => {
    next.push(
      answer({
        verdict: 'COMPLIANT',
        confidence: 0.97,
        passage: 2,
        evidence: 'All workers receive annual fire training.',
        explanation: 'Invented.',
        recommendation: null,
      }),
    );
    const { judgement } = await judge().judge('Workers must receive fire training.', [PLAN, OTHER]);
    expect(judgement.confidence).toBeLessThan(0.7);
    expect(judgement.confidence).toBe(UNSUPPORTED_CONFIDENCE_CAP);
    // Whatever is shown is still verbatim text of a passage.
    const e = judgement.evidence!;
    expect(e.passage.text.slice(e.start, e.end)).toBe(e.quote);
  });

  it('does not trust a confidence outside 0..1 (grammars that do not enforce minimum/maximum): no repair call, below 0.7', async () => {
    next.push(
      answer({
        verdict: 'CONTRADICTS',
        confidence: 7.5,
        passage: -3,
        evidence: 'Smoking is prohibited on site.',
        explanation: 'Prohibited.',
        recommendation: 'Allow it.',
      }),
    );
    const { judgement, calls } = await judge().judge('Smoking is allowed on site.', [PLAN, OTHER]);
    expect(server.requests).toHaveLength(1);
    expect(calls).toHaveLength(1);
    expect(judgement.verdict).toBe('CONTRADICTS');
    expect(judgement.confidence).toBe(UNSUPPORTED_CONFIDENCE_CAP);
    expect(judgement.explanation).toContain('outside 0 to 1');
    // A passage number that names no passage: the verbatim quote is still found.
    expect(judgement.evidence!.passage).toBe(PLAN);
  });

  it('NOT_FOUND has no evidence and a recommendation; no passages → no model call', async () => {
    next.push(answer({ verdict: 'NOT_FOUND', confidence: 0.8, passage: 0, evidence: '', explanation: 'Nothing on helipads.', recommendation: null }));
    const { judgement } = await judge().judge('A helipad must be provided.', [PLAN]);
    expect(judgement).toMatchObject({ verdict: 'NOT_FOUND', evidence: null });
    expect(judgement.recommendation).toEqual(expect.any(String));
    const empty = await judge().judge('A helipad must be provided.', []);
    expect(empty.judgement.verdict).toBe('NOT_FOUND');
    expect(empty.calls).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });

  it('breaks a requirement down with the model', async () => {
    next.push(answer({ parts: ['Visitors must sign in.', ' Visitors must wear a hard hat. ', 'Visitors must sign in.'] }));
    const { parts, calls } = await judge().breakDown('Visitors must sign in and wear a hard hat.');
    expect(parts).toEqual(['Visitors must sign in.', 'Visitors must wear a hard hat.']);
    expect(calls).toHaveLength(1);
  });

  it("an answer still unreadable after the repair is NOT_FOUND at confidence 0 (not an outage), with both calls' usage", async () => {
    const looping = {
      content: '{"verdict": "COMPLIANT", "confidence": 1, "evidence": "1, 1, 1, 1',
      usage: { prompt_tokens: 300, completion_tokens: 160, total_tokens: 460 },
    };
    next.push(looping, looping);
    const { judgement, calls } = await judge().judge('Visitors must sign in.', [PLAN, OTHER]);
    expect(judgement).toMatchObject({ verdict: 'NOT_FOUND', confidence: 0, evidence: null });
    expect(judgement.explanation).toContain('could not be read');
    expect(judgement.recommendation).toEqual(expect.any(String));
    expect(calls).toEqual([{ model: 'judge-1', usage: { promptTokens: 600, completionTokens: 320, totalTokens: 920 } }]);
    // An unreadable breakdown: the embedded rule-based breakdown instead.
    next.push(looping, looping);
    const broken = await judge().breakDown('Visitors must sign in and wear a hard hat.');
    expect(broken.parts.length).toBeGreaterThanOrEqual(1);
    expect(broken.calls[0].usage.totalTokens).toBe(920);
  });

  it('fails with ModelProviderError when the provider answers 500', async () => {
    next.push({ status: 500, content: 'boom' });
    await expect(judge().judge('Smoking is allowed.', [PLAN])).rejects.toBeInstanceOf(ModelProviderError);
  });
});
