import request from 'supertest';
import { api, baseUrl, newOrg } from './support/harness';

jest.setTimeout(120_000);

const expectValidation = (res: request.Response, pattern?: RegExp) => {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 400, code: 'VALIDATION_ERROR' });
  if (pattern) expect(res.body.error.message).toMatch(pattern);
};

const wide = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 1]));

/** Issue 29, "Hardening, round two": defects 1 and 5, each failing before its fix. */
describe('gateway hardening, round two (issue 29)', () => {
  let a: ReturnType<typeof api>;
  let projectId: string;
  beforeAll(async () => {
    a = api(newOrg('Hardening Two Org').key);
    projectId = (await a.post('/api/v2/projects').send({ name: 'Hardening two' })).body.data.id;
  });

  // Defect 1: one wide body held the event loop (and every other request) for seconds to minutes.
  it('refuses a 200,000-key body at once, naming the limit, while other requests are answered', async () => {
    const body = JSON.stringify({ name: 'x', ...wide(200_000) });
    const started = Date.now();
    const [refused, health] = await Promise.all([
      a.post('/api/v2/projects').set('Content-Type', 'application/json').send(body),
      (async () => {
        await new Promise((r) => setTimeout(r, 20));
        const t = Date.now();
        const res = await request(baseUrl()).get('/healthz');
        return { status: res.status, ms: Date.now() - t };
      })(),
    ]);
    expectValidation(refused, /more than 100 keys: an object in a request body may have at most 100/);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(health.status).toBe(200);
    expect(health.ms).toBeLessThan(1000);
  });

  it('names the path of a wide object nested in the body, and bounds requirements[].metadata', async () => {
    const run = (metadata: unknown) =>
      a.post('/api/v2/check/runs').send({ project_id: projectId, name: 'meta', requirements: [{ text: 'ok' }, { text: 'Hard hats on site.', metadata }] });
    expectValidation(await run(wide(150)), /^The object at requirements\[1\]\.metadata has more than 100 keys/);
    expectValidation(await run(wide(65)), /metadata must have at most 64 keys and array items in all/);
    expectValidation(await run({ a: { b: { c: { d: { e: { f: 1 } } } } } }), /metadata must be nested at most 5 levels/);
    expectValidation(await run({ note: 'x'.repeat(17_000) }), /metadata must be at most 16384 bytes/);
    const ok = await run({ clause: '4.2.1', ref: 'ISO 45001 4.2.1', source_row: 7 });
    expect(ok.status).toBe(201);
  });

  it('still drops unknown fields of an ordinary body', async () => {
    const res = await a.post('/api/v2/projects').send({ name: 'Unknown fields', colour: 'blue', ...wide(20) });
    expect(res.status).toBe(201);
    expect(res.body.data).not.toHaveProperty('colour');
  });

  // Defect 5: the gateway and the services counted characters differently (code points vs UTF-16 units).
  it('counts characters as code points: a 5,000-emoji requirement creates a run, 5,001 is refused', async () => {
    const emoji = (n: number) => '😀'.repeat(n);
    const created = await a.post('/api/v2/check/runs').send({ project_id: projectId, name: emoji(500), requirements: [{ text: emoji(5000) }] });
    expect(created.status).toBe(201);
    const refused = await a.post('/api/v2/check/runs').send({ project_id: projectId, name: 'too long', requirements: [{ text: emoji(5001) }] });
    expectValidation(refused, /text must be 1 to 5000 characters/);
    // U+2764 U+FE0F is two code points: 2,500 of them are 5,000 characters, one more is over.
    const heart = '\u2764\uFE0F';
    expect((await a.post('/api/v2/check/runs').send({ project_id: projectId, name: 'hearts', requirements: [{ text: heart.repeat(2500) }] })).status).toBe(201);
    expectValidation(
      await a.post('/api/v2/check/runs').send({ project_id: projectId, name: 'hearts', requirements: [{ text: heart.repeat(2500) + 'x' }] }),
      /text must be 1 to 5000/,
    );
  });

  it('accepts a project name of 200 emoji and refuses 201', async () => {
    const created = await a.post('/api/v2/projects').send({ name: '🏗'.repeat(200) });
    expect(created.status).toBe(201);
    expect([...created.body.data.name]).toHaveLength(200);
    expectValidation(await a.post('/api/v2/projects').send({ name: '🏗'.repeat(201) }), /name must be 1 to 200 characters/);
  });
});
