import { readFileSync } from 'node:fs';
import path from 'node:path';
import { api, corpusFile, newOrg, uploadFile, waitForDocument, waitForRun } from './support/harness';

jest.setTimeout(600_000);

/** A site safety plan written for this test: every fact below is known. */
const SAFETY_PLAN = `Harbor Point Site Safety Plan

1. Site access
The main gate is closed on Sundays. Visitors must sign in at the reception desk before entering the site.

2. Protective equipment
Hard hats are required at all times in the construction zone. Safety glasses must be worn when cutting or grinding.

3. Fire safety
Smoking is prohibited on site. Fire extinguishers shall be inspected every 30 days.

4. Fall protection
Guardrails shall be 42 inches high along every open edge of the scaffold.

5. Incident reporting
Incidents shall be reported to the site manager within 24 hours.
`;

const norm = (s: string) => s.replace(/\s+/g, ' ').trim();

function checkLog(): any[] {
  return readFileSync(path.join(process.env.KB_E2E_DATA_DIR!, 'logs', 'check.log'), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

function checkPid(): number {
  return JSON.parse(readFileSync(path.join(process.env.KB_E2E_DATA_DIR!, 'pids.json'), 'utf8')).check;
}

describe('compliance checking through the gateway', () => {
  let key: string;
  let orgId: string;
  let projectId: string;
  let planId: string;
  let corpusProjectId: string;
  let policyId: string;

  beforeAll(async () => {
    ({ key, orgId } = newOrg('Check Org'));
    projectId = (await api(key).post('/api/v2/projects').send({ name: 'Harbor Point' })).body.data.id;
    corpusProjectId = (await api(key).post('/api/v2/projects').send({ name: 'Datica policies' })).body.data.id;
    planId = await uploadFile(key, { bytes: Buffer.from(SAFETY_PLAN), name: 'site-safety-plan.txt', contentType: 'text/plain' }, projectId);
    policyId = await uploadFile(key, { path: corpusFile('markdown/datica_07-systems_access_policy.md') }, corpusProjectId);
    await api(key)
      .post('/api/v2/documents/process')
      .send({ document_ids: [planId, policyId] });
    expect((await waitForDocument(key, planId)).status).toBe('completed');
    expect((await waitForDocument(key, policyId)).status).toBe('completed');
  });

  describe('POST /api/v2/check/verify', () => {
    const verify = (requirement: string, pid = projectId, extra: object = {}) =>
      api(key)
        .post('/api/v2/check/verify')
        .send({ project_id: pid, requirement, ...extra });

    it('COMPLIANT with a verbatim quote, its source and handbook, no recommendation', async () => {
      const res = await verify('Visitors must sign in at the reception desk.');
      expect(res.status).toBe(200);
      const v = res.body.data;
      expect(v.verdict).toBe('COMPLIANT');
      expect(v.confidence).toBeGreaterThanOrEqual(0.7);
      expect(norm(SAFETY_PLAN)).toContain(norm(v.evidence));
      expect(v.evidence).toContain('Visitors must sign in');
      expect(v.recommendation).toBeNull();
      expect(v.sources).toEqual([expect.objectContaining({ handbook_id: planId, title: 'site-safety-plan.txt', start_page: null, end_page: null })]);
      expect(v.handbook).toEqual({ id: planId, name: 'site-safety-plan.txt' });
    });

    it.each([
      ['prohibited vs allowed', 'Smoking is allowed on site.', 'Smoking is prohibited on site.'],
      ['must not vs required', 'Hard hats must not be worn in the construction zone.', 'Hard hats are required'],
      ['closed vs open', 'The main gate must be open on Sundays.', 'The main gate is closed on Sundays.'],
      ['conflicting lengths', 'Guardrails must be at least 48 inches high.', 'Guardrails shall be 42 inches high'],
      ['conflicting deadlines', 'Incidents must be reported to the site manager within 12 hours.', 'within 24 hours'],
    ])('CONTRADICTS on %s, with a recommendation', async (_what, requirement, quote) => {
      const v = (await verify(requirement)).body.data;
      expect(v.verdict).toBe('CONTRADICTS');
      expect(v.evidence).toContain(quote);
      expect(norm(SAFETY_PLAN)).toContain(norm(v.evidence));
      expect(typeof v.recommendation).toBe('string');
      expect(v.handbook.id).toBe(planId);
    });

    it('NOT_FOUND with empty evidence, no sources, null handbook and a recommendation', async () => {
      const v = (await verify('The contractor must provide a heliport for medical evacuation flights.')).body.data;
      expect(v).toMatchObject({ verdict: 'NOT_FOUND', evidence: '', sources: [], handbook: null });
      expect(v.recommendation.length).toBeGreaterThan(10);
      expect(v.confidence).toBeGreaterThanOrEqual(0);
    });

    it('checks a real policy document from the corpus', async () => {
      const ok = (await verify('VPN sessions must be disconnected after 30 minutes of inactivity.', corpusProjectId)).body.data;
      expect(ok.verdict).toBe('COMPLIANT');
      expect(ok.evidence).toContain('30 minutes of inactivity');
      expect(norm(readFileSync(corpusFile('markdown/datica_07-systems_access_policy.md'), 'utf8'))).toContain(norm(ok.evidence));
      const bad = (await verify('Passwords may be stored in plain text.', corpusProjectId)).body.data;
      expect(bad.verdict).toBe('CONTRADICTS');
      expect(bad.evidence).toContain('plain text');
    });

    it('limits evidence to handbook_ids; unknown handbook → 404; bad input → 400', async () => {
      const only = (await verify('Visitors must sign in at the reception desk.', projectId, { handbook_ids: [policyId] })).body.data;
      expect(only.sources.every((s: any) => s.handbook_id === policyId)).toBe(true);
      expect((await verify('x', projectId, { handbook_ids: ['00000000-0000-4000-8000-000000000000'] })).status).toBe(404);
      expect((await verify('x', '00000000-0000-4000-8000-000000000000')).status).toBe(404);
      const long = await verify('a'.repeat(5001));
      expect(long.status).toBe(400);
      expect(long.body.error.code).toBe('VALIDATION_ERROR');
    });
  });

  describe('check runs', () => {
    it('creates a pending run, processes it with breakdown, and reports every requirement once', async () => {
      const requirements = [
        { text: 'Visitors must sign in at the reception desk.', metadata: { ref: 'A-1', tags: ['access'] } },
        { text: 'Smoking is allowed on site.' },
        { text: 'Visitors must sign in at the reception desk and hard hats must be worn in the construction zone.' },
        { text: 'Guardrails must be 42 inches high and incidents must be reported within 12 hours.' },
        { text: 'The contractor must provide a heliport for medical evacuation flights.' },
      ];
      const created = await api(key).post('/api/v2/check/runs').send({ project_id: projectId, name: 'Weekly audit', requirements });
      expect(created.status).toBe(201);
      const run = created.body.data;
      expect(run).toMatchObject({
        name: 'Weekly audit',
        org_id: orgId,
        project_id: projectId,
        status: 'pending',
        total_requirements: 5,
        processed_requirements: 0,
        passed_requirements: 0,
        failed_requirements: 0,
      });
      expect(typeof run.created_at).toBe('string');
      expect(typeof run.updated_at).toBe('string');

      // Pending: nothing is processed until the trigger.
      await new Promise((r) => setTimeout(r, 1000));
      const pending = (await api(key).get(`/api/v2/check/runs/${run.id}`)).body.data;
      expect(pending.status).toBe('pending');
      expect(pending.processing_started_at).toBeNull();
      expect(pending.requirements.map((r: any) => [r.order_index, r.status, r.sub_requirements])).toEqual(requirements.map((_, i) => [i, 'pending', []]));
      expect(pending.requirements[0].metadata).toEqual({ ref: 'A-1', tags: ['access'] });
      expect(pending.requirements[1].metadata).toBeNull();

      // Stop on a pending run → 409.
      expect((await api(key).post(`/api/v2/check/runs/${run.id}/stop`)).status).toBe(409);

      const trig = await api(key).post(`/api/v2/check/runs/${run.id}/trigger`).send({});
      expect(trig.status).toBe(200);
      expect(trig.body.data).toEqual({ run_id: run.id, task_id: expect.any(String), status: 'processing' });

      const done = await waitForRun(key, run.id, ['completed']);
      expect(done.processed_requirements).toBe(5);
      expect(done.passed_requirements + done.failed_requirements).toBe(5);
      expect(new Date(done.processing_started_at).getTime()).toBeLessThanOrEqual(new Date(done.processing_completed_at).getTime());
      const byIndex = done.requirements.sort((a: any, b: any) => a.order_index - b.order_index);
      for (const r of byIndex) {
        expect(r.status).toBe('completed');
        expect(r.sub_requirements.length).toBeGreaterThanOrEqual(1);
        for (const s of r.sub_requirements) {
          expect(s.requirement_id).toBe(r.id);
          expect(['comply', 'not-comply']).toContain(s.status);
          expect(s.score).toBeGreaterThanOrEqual(0);
          expect(s.score).toBeLessThanOrEqual(1);
          expect(s.justification.length).toBeGreaterThan(10);
          expect(Array.isArray(s.sources)).toBe(true);
        }
      }
      // Compliant, contradicted, compound (both parts comply), compound (one part fails), not found.
      expect(byIndex[0].sub_requirements.map((s: any) => s.status)).toEqual(['comply']);
      expect(byIndex[0].sub_requirements[0].sources[0]).toMatchObject({ handbook_id: planId, title: 'site-safety-plan.txt' });
      expect(byIndex[1].sub_requirements.map((s: any) => s.status)).toEqual(['not-comply']);
      expect(byIndex[2].sub_requirements.map((s: any) => s.text)).toEqual([
        'Visitors must sign in at the reception desk',
        'Hard hats must be worn in the construction zone',
      ]);
      expect(byIndex[2].sub_requirements.map((s: any) => s.status)).toEqual(['comply', 'comply']);
      expect(byIndex[3].sub_requirements.map((s: any) => s.status)).toEqual(['comply', 'not-comply']);
      expect(byIndex[4].sub_requirements[0]).toMatchObject({ status: 'not-comply', sources: [] });
      // A requirement passes only when all its parts comply.
      expect(done.passed_requirements).toBe(2);
      expect(done.failed_requirements).toBe(3);

      // Requirements listing: sub-requirements, metadata, timestamps.
      const listing = await api(key).get(`/api/v2/check/runs/${run.id}/requirements`);
      expect(listing.status).toBe(200);
      expect(listing.body.data).toHaveLength(5);
      expect(listing.body.data[0]).toMatchObject({ run_id: run.id, order_index: 0, metadata: { ref: 'A-1', tags: ['access'] }, status: 'completed' });
      expect(typeof listing.body.data[0].created_at).toBe('string');
      expect(typeof listing.body.data[0].updated_at).toBe('string');

      // Trigger on a completed run without reprocess: nothing left → completed at once.
      const again = await api(key).post(`/api/v2/check/runs/${run.id}/trigger`);
      expect(again.status).toBe(200);
      expect(again.body.data.status).toBe('completed');
      // With reprocess every requirement is checked again, counted once.
      const re = await api(key).post(`/api/v2/check/runs/${run.id}/trigger`).send({ reprocess: true, skip_breakdown: true });
      expect(re.body.data.status).toBe('processing');
      expect(re.body.data.task_id).not.toBe(trig.body.data.task_id);
      const redone = await waitForRun(key, run.id, ['completed']);
      expect(redone.processed_requirements).toBe(5);
      expect(redone.passed_requirements + redone.failed_requirements).toBe(5);
      // skip_breakdown: exactly one sub-requirement with the requirement's own text.
      for (const r of redone.requirements) expect(r.sub_requirements.map((s: any) => s.text)).toEqual([r.text]);
    });

    it('validates input and hides other organizations’ runs', async () => {
      const bad = async (body: object) => {
        const res = await api(key).post('/api/v2/check/runs').send(body);
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe('VALIDATION_ERROR');
      };
      await bad({ project_id: projectId, name: 'x', requirements: [] });
      await bad({ project_id: projectId, name: 'x', requirements: Array.from({ length: 1001 }, () => ({ text: 'a' })) });
      await bad({ project_id: projectId, name: 'x', requirements: [{ text: 'a'.repeat(5001) }] });
      await bad({ project_id: projectId, name: 'x', requirements: [{ text: 'ok', metadata: 'nope' }] });
      await bad({ project_id: 'nope', name: 'x', requirements: [{ text: 'ok' }] });
      await bad({ project_id: projectId, requirements: [{ text: 'ok' }] });
      const missing = await api(key)
        .post('/api/v2/check/runs')
        .send({ project_id: '00000000-0000-4000-8000-000000000000', name: 'x', requirements: [{ text: 'ok' }] });
      expect(missing.status).toBe(404);
      expect((await api(key).get('/api/v2/check/runs/not-a-uuid')).status).toBe(400);
      expect((await api(key).get('/api/v2/check/runs?limit=201')).status).toBe(400);

      const run = (
        await api(key)
          .post('/api/v2/check/runs')
          .send({ project_id: projectId, name: 'Private', requirements: [{ text: 'ok' }] })
      ).body.data;
      const other = newOrg('Other Check Org');
      expect((await api(other.key).get(`/api/v2/check/runs/${run.id}`)).status).toBe(404);
      expect((await api(other.key).get(`/api/v2/check/runs/${run.id}/requirements`)).status).toBe(404);
      expect((await api(other.key).post(`/api/v2/check/runs/${run.id}/trigger`)).status).toBe(404);
      expect((await api(other.key).post(`/api/v2/check/runs/${run.id}/stop`)).status).toBe(404);
      expect((await api(other.key).get('/api/v2/check/runs')).body.data).toEqual([]);
      // Another org's project cannot be checked either.
      expect(
        (
          await api(other.key)
            .post('/api/v2/check/runs')
            .send({ project_id: projectId, name: 'x', requirements: [{ text: 'ok' }] })
        ).status,
      ).toBe(404);
    });

    it('documents every check route in the OpenAPI document', async () => {
      const doc = (await api(key).get('/docs/openapi.json')).body;
      const ops: Record<string, string[]> = {
        '/api/v2/check/verify': ['post'],
        '/api/v2/check/runs': ['post', 'get'],
        '/api/v2/check/runs/{id}': ['get'],
        '/api/v2/check/runs/{id}/trigger': ['post'],
        '/api/v2/check/runs/{id}/stop': ['post'],
        '/api/v2/check/runs/{id}/requirements': ['get'],
      };
      for (const [route, methods] of Object.entries(ops)) for (const m of methods) expect(doc.paths[route]?.[m]).toBeDefined();
      expect(Object.keys(doc.paths['/api/v2/check/runs/{id}/trigger'].post.responses)).toContain('409');
      expect(doc.components.schemas.CreateRunDto.required).toEqual(expect.arrayContaining(['project_id', 'name', 'requirements']));
    });

    it('lists runs newest first with a project filter and pagination', async () => {
      const { key: k } = newOrg('List Check Org');
      const p1 = (await api(k).post('/api/v2/projects').send({ name: 'P1' })).body.data.id;
      const p2 = (await api(k).post('/api/v2/projects').send({ name: 'P2' })).body.data.id;
      const ids: string[] = [];
      for (const [i, p] of [p1, p2, p1].entries()) {
        ids.push(
          (
            await api(k)
              .post('/api/v2/check/runs')
              .send({ project_id: p, name: `run ${i}`, requirements: [{ text: 'ok' }] })
          ).body.data.id,
        );
      }
      const all = await api(k).get('/api/v2/check/runs');
      expect(all.body.data.map((r: any) => r.id)).toEqual([...ids].reverse());
      expect(all.body.pagination).toEqual({ limit: 50, offset: 0, total: 3 });
      expect(all.body.data[0]).not.toHaveProperty('requirements');
      expect(all.body.data[0]).toHaveProperty('processing_started_at', null);
      const filtered = await api(k).get(`/api/v2/check/runs?project_id=${p1}&limit=1&offset=1`);
      expect(filtered.body.data.map((r: any) => r.id)).toEqual([ids[0]]);
      expect(filtered.body.pagination).toEqual({ limit: 1, offset: 1, total: 2 });
    });

    it('1,000 requirements with skip_breakdown: 409 while processing, stop, resume, each counted once', async () => {
      const topics = [
        'Visitors must sign in at the reception desk',
        'Smoking is allowed on site',
        'Hard hats are required in the construction zone',
        'Fire extinguishers must be inspected every 30 days',
        'The contractor must provide a heliport',
      ];
      const requirements = Array.from({ length: 1000 }, (_, i) => ({ text: `${topics[i % topics.length]} (item ${i + 1}).` }));
      const run = (await api(key).post('/api/v2/check/runs').send({ project_id: projectId, name: 'Thousand', requirements })).body.data;
      expect(run.total_requirements).toBe(1000);
      const trig = await api(key).post(`/api/v2/check/runs/${run.id}/trigger`).send({ skip_breakdown: true });
      expect(trig.body.data.status).toBe('processing');
      const conflict = await api(key).post(`/api/v2/check/runs/${run.id}/trigger`).send({});
      expect(conflict.status).toBe(409);
      expect(conflict.body.error.code).toBe('CONFLICT');

      const stopped = await api(key).post(`/api/v2/check/runs/${run.id}/stop`);
      expect(stopped.status).toBe(200);
      expect(stopped.body.data.status).toBe('stopped');
      expect((await api(key).post(`/api/v2/check/runs/${run.id}/stop`)).status).toBe(409);
      await new Promise((r) => setTimeout(r, 1500));
      const afterStop = (await api(key).get(`/api/v2/check/runs/${run.id}`)).body.data;
      expect(afterStop.status).toBe('stopped');
      expect(afterStop.requirements.filter((r: any) => r.status === 'processing')).toEqual([]);
      expect(afterStop.processed_requirements).toBeLessThan(1000);
      expect(afterStop.processed_requirements).toBe(afterStop.requirements.filter((r: any) => r.status === 'completed').length);

      const resumed = await api(key).post(`/api/v2/check/runs/${run.id}/trigger`).send({ skip_breakdown: true });
      expect(resumed.body.data.status).toBe('processing');
      const done = await waitForRun(key, run.id, ['completed'], 400_000);
      expect(done.processed_requirements).toBe(1000);
      expect(done.passed_requirements + done.failed_requirements).toBe(1000);
      const passed = done.requirements.filter((r: any) => r.sub_requirements.every((s: any) => s.status === 'comply')).length;
      expect(done.passed_requirements).toBe(passed);
      expect(done.requirements.every((r: any) => r.sub_requirements.length === 1)).toBe(true);
    });

    it('survives a killed check worker: the run completes with every requirement counted exactly once', async () => {
      const requirements = Array.from({ length: 120 }, (_, i) => ({
        text: i % 2 ? `Visitors must sign in at the reception desk and hard hats must be worn (check ${i}).` : `Smoking is allowed on site (check ${i}).`,
      }));
      const run = (await api(key).post('/api/v2/check/runs').send({ project_id: projectId, name: 'Crash', requirements })).body.data;
      const before = checkPid();
      await api(key).post(`/api/v2/check/runs/${run.id}/trigger`).send({});
      // Kill it once some, but not all, requirements are done.
      for (let i = 0; i < 600; i++) {
        const r = (await api(key).get(`/api/v2/check/runs/${run.id}`)).body.data;
        if (r.processed_requirements >= 5) break;
        await new Promise((res) => setTimeout(res, 50));
      }
      const atKill = (await api(key).get(`/api/v2/check/runs/${run.id}`)).body.data.processed_requirements;
      const killedAt = Date.now();
      process.kill(before, 'SIGKILL');
      for (let i = 0; i < 100 && checkPid() === before; i++) await new Promise((r) => setTimeout(r, 100));
      expect(checkPid()).not.toBe(before);

      const done = await waitForRun(key, run.id, ['completed'], 300_000);
      expect(done.processed_requirements).toBe(120);
      expect(done.passed_requirements + done.failed_requirements).toBe(120);
      const passed = done.requirements.filter((r: any) => r.sub_requirements.every((s: any) => s.status === 'comply')).length;
      expect(done.passed_requirements).toBe(passed);
      // No requirement stored twice across both processes. (The killed process may have committed up to
      // CHECK_RUN_CONCURRENCY results without logging them: the database counters above are the truth.)
      const stored = checkLog().filter((l) => l.msg === 'requirement checked' && l.run_id === run.id && l.outcome === 'stored');
      expect(new Set(stored.map((l) => l.requirement_id)).size).toBe(stored.length);
      expect(stored.length).toBeGreaterThanOrEqual(116);
      // It really was interrupted mid-run: work items in flight in the killed process were redelivered.
      expect(atKill).toBeLessThan(120);
      const redelivered = checkLog().filter((l) => l.msg === 'checking requirement' && l.run_id === run.id && l.attempt >= 2);
      expect(redelivered.length).toBeGreaterThan(0);
      // The takeover pause (kill → a worker starts a redelivered item): printed, not asserted (no
      // timed assertions); docs/check.md keeps the measured figure.
      const takeover = Math.min(...redelivered.map((l) => Date.parse(l.time))) - killedAt;
      console.log(`takeover pause (check run, worker killed mid-run): ${takeover} ms`);
      // Only the requirements in flight at the kill were checked again (a repeat is a paid model call
      // with a hosted judge): at most one per work item the killed process held (CHECK_RUN_CONCURRENCY, 4).
      const checking = checkLog().filter((l) => l.msg === 'checking requirement' && l.run_id === run.id);
      const repeats = checking.length - new Set(checking.map((l) => l.requirement_id)).size;
      console.log(`requirements checked again after the kill: ${repeats} of 120`);
      expect(repeats).toBeLessThanOrEqual(4);
    });
  });
});
