import { api, baseUrl, newOrg, streamChat, uploadFile, waitForDocument } from './support/harness';

jest.setTimeout(300_000);

/**
 * Answerability through the API (decisions.md "Answerability"): an answer cites only sentences that
 * answer the question, says plainly when the documents do not, and carries a calibrated
 * `confidence` in query, chat (JSON and SSE) and batch results.
 */
const GUARDRAIL_SENTENCE = 'Guardrails shall be 42 inches high, plus or minus 3 inches, measured from the walking surface.';
const RULES = [
  '# Site rules',
  '',
  `Fall protection is required on every open side of a platform. ${GUARDRAIL_SENTENCE} Toe boards are needed on scaffolds.`,
  '',
  'Hard hats are required at all times on site. Smoking is prohibited on site. Visitors must sign in at the gate.',
  '',
  'The canteen opens at 7 am. Parking is available behind the office.',
  '',
].join('\n');

const NOT_FOUND = 'No relevant information was found in the documents for this question.';
const ANSWERABLE = 'How high must guardrails be?';
const UNANSWERABLE = 'What is the fire extinguisher inspection interval?';

describe('agent: answers that know when they do not know', () => {
  const org = newOrg('E2E Answerability');
  const a = api(org.key);
  let projectId: string;

  beforeAll(async () => {
    projectId = (await a.post('/api/v2/projects').send({ name: 'Answerability' })).body.data.id;
    const id = await uploadFile(org.key, { bytes: Buffer.from(RULES), name: 'site-rules.md' }, projectId);
    await a.post('/api/v2/documents/process').send({ document_ids: [id] });
    expect((await waitForDocument(org.key, id)).status).toBe('completed');
  });

  it('query: a question the documents do not answer gets a plain "not found", no citations and confidence below 0.7', async () => {
    const res = await a.post('/api/v2/agent/query').send({ question: UNANSWERABLE, project_id: projectId, chat_type: 'project' });
    expect(res.status).toBe(200);
    expect(res.body.data.answer).toBe(NOT_FOUND);
    expect(res.body.data.citations).toEqual([]);
    expect(typeof res.body.data.confidence).toBe('number');
    expect(res.body.data.confidence).toBeGreaterThanOrEqual(0);
    expect(res.body.data.confidence).toBeLessThan(0.7);
  });

  it('query: a question that shares only a common word with the documents is declined by the coverage floor', async () => {
    // "site" is in three sentences of the rules; what the question is about (boiling point, liquid
    // nitrogen) is in none: no passage covers 0.34 of its content (MIN_ANSWER_COVERAGE, docs/agent.md).
    const res = await a
      .post('/api/v2/agent/query')
      .send({ question: 'What is the boiling point of liquid nitrogen on site?', project_id: projectId, chat_type: 'project' });
    expect(res.status).toBe(200);
    expect(res.body.data.answer).toBe(NOT_FOUND);
    expect(res.body.data.citations).toEqual([]);
    expect(res.body.data.confidence).toBeLessThan(0.7);
  });

  it('query: an answerable question cites the whole sentence holding the answer first, with its confidence', async () => {
    const res = await a.post('/api/v2/agent/query').send({ question: ANSWERABLE, project_id: projectId, chat_type: 'project' });
    expect(res.status).toBe(200);
    const d = res.body.data;
    expect(d.citations.length).toBeGreaterThan(0);
    expect(d.citations[0].quote).toBe(GUARDRAIL_SENTENCE);
    expect(d.answer).toContain(`"${GUARDRAIL_SENTENCE}" [1]`);
    expect(d.confidence).toBeGreaterThan(0);
    expect(d.confidence).toBeLessThanOrEqual(1);
    // The answered question is more likely answered than the one the documents do not answer.
    const unanswered = await a.post('/api/v2/agent/query').send({ question: UNANSWERABLE, project_id: projectId, chat_type: 'project' });
    expect(d.confidence).toBeGreaterThan(unanswered.body.data.confidence);
  });

  it('chat: the JSON reply and the SSE stream (citations event) carry the same confidence', async () => {
    const body = { messages: [{ role: 'user', content: ANSWERABLE }], project_id: projectId, chat_type: 'project' };
    const json = await a.post('/api/v2/chat').send(body);
    expect(json.status).toBe(200);
    expect(json.body.data.citations[0].quote).toBe(GUARDRAIL_SENTENCE);
    expect(typeof json.body.data.confidence).toBe('number');

    const st = await streamChat(org.key, body);
    expect(st.res.status).toBe(200);
    const names = st.events.map((e) => e.event);
    expect(names[0]).toBe('meta');
    expect(names.slice(-2)).toEqual(['citations', 'done']);
    const citations = JSON.parse(st.events.find((e) => e.event === 'citations')!.data);
    expect(citations.confidence).toBe(json.body.data.confidence);
    expect(citations.citations[0].quote).toBe(GUARDRAIL_SENTENCE);

    const none = await streamChat(org.key, { ...body, messages: [{ role: 'user', content: UNANSWERABLE }] });
    const noneCitations = JSON.parse(none.events.find((e) => e.event === 'citations')!.data);
    expect(noneCitations.citations).toEqual([]);
    expect(noneCitations.confidence).toBeLessThan(0.7);
    expect(
      none.events
        .filter((e) => e.event === 'delta')
        .map((e) => JSON.parse(e.data).content)
        .join(''),
    ).toBe(NOT_FOUND);
  });

  it('batches: every answered result carries its confidence; the CSV keeps the contract header', async () => {
    const created = await a.post('/api/v2/agent/batches').send({ questions: [ANSWERABLE, UNANSWERABLE], project_id: projectId, chat_type: 'project' });
    expect(created.status).toBe(201);
    let b: any;
    for (const deadline = Date.now() + 120_000; Date.now() < deadline;) {
      b = (await a.get(`/api/v2/agent/batches/${created.body.data.id}`)).body.data;
      if (b.status === 'completed') break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(b.status).toBe('completed');
    const [answered, unanswered] = b.results;
    expect(answered.citations[0].quote).toBe(GUARDRAIL_SENTENCE);
    expect(answered.confidence).toBeGreaterThan(0);
    expect(unanswered.citations).toEqual([]);
    expect(unanswered.answer).toBe(NOT_FOUND);
    expect(unanswered.confidence).toBeLessThan(0.7);
    // The same question asked directly gets the same confidence.
    const direct = await a.post('/api/v2/agent/query').send({ question: ANSWERABLE, project_id: projectId, chat_type: 'project' });
    expect(answered.confidence).toBe(direct.body.data.confidence);
    const csv = await fetch(`${baseUrl()}/api/v2/agent/batches/${b.id}/export`, { headers: { Authorization: `Bearer ${org.key}` } });
    expect((await csv.text()).split('\r\n')[0]).toBe('index,question,status,answer,sources,error');
  });
});
