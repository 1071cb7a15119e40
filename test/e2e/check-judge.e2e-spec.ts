import { api, createProject, newOrg, processDocuments, uploadFile } from './support/harness';

jest.setTimeout(600_000);

/**
 * The judge examples of issue 13 ("Verdicts and answers a professional can trust") through the API, with
 * the embedded judge (no chat model): what a compliance officer expects from each.
 */
const PLAN = `Riverside Works Environmental and Security Plan

1. Noise
Hearing protection is required wherever noise exceeds 85 decibels. Noisy work is permitted only between 7 a.m. and 6 p.m. on weekdays. Noise monitoring results are reported to the site manager every week.

2. Visitors
Visitors must sign in at the reception desk. Visitors must wear a visitor badge at all times.

3. Remote access
All VPN connections use IPsec with certificate-based authentication. Remote workers connect to the corporate network through the VPN only.
`;

const norm = (s: string) => s.replace(/\s+/g, ' ').trim();

describe('issue 13 judge examples through the API', () => {
  let key: string;
  let projectId: string;

  beforeAll(async () => {
    ({ key } = newOrg('Judge Examples Org'));
    projectId = await createProject(key, 'Riverside Works');
    const id = await uploadFile(key, { bytes: Buffer.from(PLAN), name: 'riverside-plan.txt', contentType: 'text/plain' }, projectId);
    await processDocuments(key, [id]);
  });

  const verify = async (requirement: string) => {
    const res = await api(key).post('/api/v2/check/verify').send({ project_id: projectId, requirement });
    expect(res.status).toBe(200);
    return res.body.data;
  };

  it('"above 85 decibels" is met by "exceeds 85 decibels": COMPLIANT', async () => {
    const v = await verify('Hearing protection must be worn where noise is above 85 decibels.');
    expect(v.verdict).toBe('COMPLIANT');
    expect(norm(v.evidence)).toContain('Hearing protection is required wherever noise exceeds 85 decibels.');
    expect(v.recommendation).toBeNull();
  });

  it('"must not start before 7 a.m." is met by "permitted only between 7 a.m. and 6 p.m.": COMPLIANT', async () => {
    const v = await verify('Noisy work must not start before 7 a.m.');
    expect(v.verdict).toBe('COMPLIANT');
    expect(norm(v.evidence)).toContain('Noisy work is permitted only between 7 a.m. and 6 p.m. on weekdays.');
  });

  it('encryption at rest is not COMPLIANT on a sentence about VPN connections', async () => {
    const v = await verify('All customer data at rest must be encrypted with AES-256.');
    expect(v.verdict).not.toBe('COMPLIANT');
    if (v.verdict !== 'NOT_FOUND') expect(v.confidence).toBeLessThan(0.7);
    expect(typeof v.recommendation).toBe('string');
  });

  it('a compound requirement whose two facts the plan states word for word passes in a check run', async () => {
    const created = await api(key)
      .post('/api/v2/check/runs')
      .send({
        project_id: projectId,
        name: 'Visitors',
        requirements: [{ text: 'Visitors must sign in at the reception desk and must wear a visitor badge at all times.' }],
      });
    expect(created.status).toBe(201);
    const runId = created.body.data.id;
    expect((await api(key).post(`/api/v2/check/runs/${runId}/trigger`).send({})).status).toBe(200);
    let run: any;
    for (const deadline = Date.now() + 300_000; ;) {
      run = (await api(key).get(`/api/v2/check/runs/${runId}`)).body.data;
      if (run.status === 'completed' || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(run.status).toBe('completed');
    const subs = run.requirements[0].sub_requirements;
    expect(subs.map((s: any) => s.text)).toEqual(['Visitors must sign in at the reception desk', 'Visitors must wear a visitor badge at all times']);
    expect(subs.map((s: any) => s.status)).toEqual(['comply', 'comply']);
    for (const s of subs) {
      // The score is the calibrated confidence: below 0.7 the justification says the evidence is insufficient.
      expect(s.justification).toContain(s.text);
      if (s.score < 0.7) expect(s.justification).toMatch(/insufficient/);
    }
    expect(run.passed_requirements).toBe(1);
    expect(run.failed_requirements).toBe(0);
  });
});
