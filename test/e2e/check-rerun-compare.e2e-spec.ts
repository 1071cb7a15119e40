import { api, corpusFile, createProject, newOrg, processDocuments, uploadFile, waitForRun } from './support/harness';
import { HARD_HATS, riversideSitePlan, VISITORS } from './support/site-plan';

jest.setTimeout(600_000);

/**
 * Re-running and comparing check runs end to end (decisions.md "Re-running and comparing check
 * runs", docs/check.md "Rerun and compare"): a run against a real policy from the corpus, the
 * knowledge scope then gains a site plan that states a requirement the first run failed, the rerun
 * checks against the scope as it is now, and the comparison lists that requirement with before
 * (the first run) and after (the rerun).
 */
const POLICY = 'markdown/datica_07-systems_access_policy.md';
const VPN = 'VPN sessions must be disconnected after 30 minutes of inactivity.';
const PLAN = riversideSitePlan({ markdown: false, visitors: true });

describe('rerun and compare check runs', () => {
  let key: string;
  let otherKey: string;
  let projectId: string;
  let policyId: string;
  let planId: string;
  let first: any;
  let rerun: any;

  const trigger = async (id: string) => expect((await api(key).post(`/api/v2/check/runs/${id}/trigger`).send({ skip_breakdown: true })).status).toBe(200);
  const compare = (id: string, query: string, k = key) => api(k).get(`/api/v2/check/runs/${id}/compare${query}`);

  beforeAll(async () => {
    ({ key } = newOrg('E2E Rerun'));
    ({ key: otherKey } = newOrg('E2E Rerun other'));
    projectId = await createProject(key, 'Access policy');
    policyId = await uploadFile(key, { path: corpusFile(POLICY) }, projectId);
    await processDocuments(key, [policyId]);
    const created = await api(key)
      .post('/api/v2/check/runs')
      .send({ project_id: projectId, name: 'Revision A', handbook_ids: [], requirements: [{ text: VPN, metadata: { ref: 'AC-7' } }, { text: VISITORS }] });
    expect(created.status).toBe(201);
    expect(created.body.data.source_run_id).toBeNull();
    await trigger(created.body.data.id);
    first = await waitForRun(key, created.body.data.id);
    expect(first.status).toBe('completed');
    const byText = Object.fromEntries(first.requirements.map((r: any) => [r.text, r]));
    expect(byText[VPN].sub_requirements.every((s: any) => s.status === 'comply')).toBe(true);
    expect(byText[VISITORS].sub_requirements.some((s: any) => s.status !== 'comply')).toBe(true);
  });

  it('POST …/rerun creates a pending run with the same requirements, handbook_ids and source_run_id; it checks the scope as it is now', async () => {
    // The knowledge scope changes: a site plan that states the visitors requirement.
    planId = await uploadFile(key, { bytes: Buffer.from(PLAN), name: 'riverside-site-plan.txt', contentType: 'text/plain' }, projectId);
    await processDocuments(key, [planId]);

    const res = await api(key).post(`/api/v2/check/runs/${first.id}/rerun`).send({});
    expect(res.status).toBe(201);
    expect(res.body.success).toBe(true);
    expect(res.body.data).toMatchObject({
      name: 'Revision A (rerun)',
      project_id: projectId,
      status: 'pending',
      handbook_ids: [],
      total_requirements: 2,
      processed_requirements: 0,
      source_run_id: first.id,
    });
    expect(res.body.data.id).not.toBe(first.id);
    const reqs = (await api(key).get(`/api/v2/check/runs/${res.body.data.id}/requirements`)).body.data;
    expect(reqs.map((r: any) => [r.order_index, r.text, r.metadata, r.status])).toEqual([
      [0, VPN, { ref: 'AC-7' }, 'pending'],
      [1, VISITORS, null, 'pending'],
    ]);
    // The run appears in lists with its source.
    const listed = (await api(key).get(`/api/v2/check/runs?project_id=${projectId}`)).body.data;
    expect(listed.find((r: any) => r.id === res.body.data.id).source_run_id).toBe(first.id);

    await trigger(res.body.data.id);
    rerun = await waitForRun(key, res.body.data.id);
    expect(rerun.status).toBe('completed');
  });

  it('GET …/compare?with= lists the requirement whose verdict changed, before = the {id} run, after = with', async () => {
    const res = await compare(first.id, `?with=${rerun.id}`);
    expect(res.status).toBe(200);
    const c = res.body.data;
    expect(c.run_id).toBe(first.id);
    expect(c.with_run_id).toBe(rerun.id);
    expect(c.summary.only_in_run).toBe(0);
    expect(c.summary.only_in_with).toBe(0);
    expect(c.summary.unchanged + c.summary.changed).toBe(2);
    expect(c.changes).toHaveLength(c.summary.changed);
    const visitors = c.changes.find((x: any) => x.text === VISITORS);
    expect(visitors).toMatchObject({ order_index: 1, before: { result: 'fail' }, after: { result: 'pass' } });
    expect(visitors.after.score).toBeGreaterThanOrEqual(0.7);
    expect(visitors.after.evidence.join(' ')).toContain('Visitors must sign in');
    expect(visitors.after.sources[0]).toMatchObject({ handbook_id: planId, title: 'riverside-site-plan.txt', start_page: null, end_page: null });
    expect(Object.keys(visitors.after.sources[0]).sort()).toEqual([
      'boxes',
      'end_page',
      'handbook_id',
      'location',
      'node_id',
      'section',
      'start_page',
      'title',
    ]);
    // A text file has no pages: the quote's place is its offsets in the chunk, no boxes.
    expect(visitors.after.sources[0].boxes).toEqual([]);
    expect(visitors.before.sources.every((s: any) => s.handbook_id !== planId)).toBe(true);

    // The reverse reading swaps before and after.
    const reverse = (await compare(rerun.id, `?with=${first.id}`)).body.data;
    expect(reverse.changes.find((x: any) => x.text === VISITORS)).toMatchObject({ before: { result: 'pass' }, after: { result: 'fail' } });
    // A run compared with itself changes nothing.
    expect((await compare(first.id, `?with=${first.id}`)).body.data).toMatchObject({
      summary: { unchanged: 2, changed: 0, only_in_run: 0, only_in_with: 0 },
      changes: [],
    });
  });

  it('lists unmatched requirements with before or after null, also across projects; pending requirements compare as pending', async () => {
    const otherProject = await createProject(key, 'Elsewhere');
    const other = await api(key)
      .post('/api/v2/check/runs')
      .send({ project_id: otherProject, name: 'Other project', requirements: [{ text: VISITORS }, { text: 'Forklift drivers must hold a valid licence.' }] });
    expect(other.status).toBe(201);
    const c = (await compare(first.id, `?with=${other.body.data.id}`)).body.data;
    expect(c.summary).toEqual({ unchanged: 0, changed: 1, only_in_run: 1, only_in_with: 1 });
    expect(c.changes).toEqual([
      expect.objectContaining({ order_index: 0, text: VPN, after: null, before: expect.objectContaining({ result: 'pass' }) }),
      expect.objectContaining({
        order_index: 1,
        text: VISITORS,
        before: expect.objectContaining({ result: 'fail' }),
        after: { result: 'pending', score: null, evidence: [], sources: [] },
      }),
      expect.objectContaining({ order_index: 1, text: 'Forklift drivers must hold a valid licence.', before: null }),
    ]);
  });

  it('rerun takes a name; bad bodies are 400 and unknown or other organizations’ runs 404', async () => {
    const named = await api(key).post(`/api/v2/check/runs/${first.id}/rerun`).send({ name: '  Revision B  ' });
    expect(named.status).toBe(201);
    expect(named.body.data).toMatchObject({ name: 'Revision B', source_run_id: first.id });
    const noBody = await api(key).post(`/api/v2/check/runs/${first.id}/rerun`);
    expect(noBody.status).toBe(201);
    expect(noBody.body.data.name).toBe('Revision A (rerun)');
    const nullName = await api(key).post(`/api/v2/check/runs/${first.id}/rerun`).send({ name: null });
    expect([nullName.status, nullName.body.data?.name]).toEqual([201, 'Revision A (rerun)']);

    for (const body of [{ name: '' }, { name: '   ' }, { name: 5 }, { name: 'x'.repeat(501) }]) {
      const res = await api(key).post(`/api/v2/check/runs/${first.id}/rerun`).send(body);
      expect([JSON.stringify(body), res.status, res.body.error?.code]).toEqual([JSON.stringify(body), 400, 'VALIDATION_ERROR']);
    }
    expect((await api(key).post('/api/v2/check/runs/not-a-uuid/rerun').send({})).status).toBe(400);
    const foreign = await api(otherKey).post(`/api/v2/check/runs/${first.id}/rerun`).send({});
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('NOT_FOUND');
    expect((await api(key).post('/api/v2/check/runs/00000000-0000-4000-8000-000000000000/rerun').send({})).status).toBe(404);
    // Nothing was created in the other organization.
    expect((await api(otherKey).get('/api/v2/check/runs')).body.pagination.total).toBe(0);
  });

  it('compare: missing or invalid with → 400; another organization’s run (either side) or an unknown one → 404', async () => {
    for (const q of ['', '?with=', '?with=nope', `?with=${rerun.id}x`]) {
      const res = await compare(first.id, q);
      expect([q, res.status, res.body.error?.code]).toEqual([q, 400, 'VALIDATION_ERROR']);
      expect(res.body.error.message).toContain('with');
    }
    const { key: thirdKey } = newOrg('E2E Rerun third');
    const foreignProject = await createProject(thirdKey, 'Theirs');
    const foreignRun = (
      await api(thirdKey)
        .post('/api/v2/check/runs')
        .send({ project_id: foreignProject, name: 'Theirs', requirements: [{ text: VISITORS }] })
    ).body.data;
    const withForeign = await compare(first.id, `?with=${foreignRun.id}`);
    expect(withForeign.status).toBe(404);
    expect(withForeign.body.error.code).toBe('NOT_FOUND');
    expect((await compare(foreignRun.id, `?with=${first.id}`)).status).toBe(404);
    expect((await compare(first.id, `?with=${first.id}`, otherKey)).status).toBe(404);
    expect((await compare(first.id, '?with=00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });

  it('a revision of the plan (replaces) that drops the visitors rule: the rerun fails it and compare shows pass → fail, quoting revision A before', async () => {
    // A run of a rule the revision keeps word for word, against revision A.
    const hats = await api(key)
      .post('/api/v2/check/runs')
      .send({ project_id: projectId, name: 'Hard hats A', requirements: [{ text: HARD_HATS }] });
    await trigger(hats.body.data.id);
    const hatsA = await waitForRun(key, hats.body.data.id);
    expect(hatsA.requirements[0].sub_requirements[0]).toMatchObject({ status: 'comply', sources: [expect.objectContaining({ handbook_id: planId })] });
    // Revision B of the site plan: the sign-in rule is gone (issue 28: "what changed in compliance between revision A and revision B").
    const revisionB = await uploadFile(
      key,
      {
        bytes: Buffer.from(riversideSitePlan({ markdown: false, visitors: false })),
        name: 'riverside-site-plan.txt',
        contentType: 'text/plain',
        replaces: planId,
      },
      projectId,
    );
    await processDocuments(key, [revisionB]);
    const superseded = (await api(key).get(`/api/v2/documents/${planId}`)).body.data;
    expect(superseded).toMatchObject({ superseded_by: revisionB, version: 1 });

    const again = await api(key).post(`/api/v2/check/runs/${rerun.id}/rerun`).send({ name: 'Revision B' });
    expect(again.status).toBe(201);
    await trigger(again.body.data.id);
    const revised = await waitForRun(key, again.body.data.id);
    expect(revised.status).toBe('completed');

    const c = (await compare(rerun.id, `?with=${revised.id}`)).body.data;
    const visitors = c.changes.find((x: any) => x.text === VISITORS);
    expect(visitors).toMatchObject({ before: { result: 'pass' }, after: { result: 'fail' } });
    expect(visitors.before.sources[0].handbook_id).toBe(planId);
    // Revision A is out of the knowledge scope: the rerun cites neither it nor a sign-in rule.
    expect(visitors.after.sources.every((x: any) => x.handbook_id !== planId)).toBe(true);
    expect(visitors.after.evidence.join(' ')).not.toContain('Visitors must sign in');

    // The kept rule: its first source is now revision B (another chunk of another document id), with
    // the same quote. A revision is one document: compare does not list it as changed.
    const hatsRerun = await api(key).post(`/api/v2/check/runs/${hatsA.id}/rerun`).send({});
    await trigger(hatsRerun.body.data.id);
    const hatsB = await waitForRun(key, hatsRerun.body.data.id);
    expect(hatsB.requirements[0].sub_requirements[0].sources[0].handbook_id).toBe(revisionB);
    expect(hatsB.requirements[0].sub_requirements[0].status).toBe('comply');
    expect((await compare(hatsA.id, `?with=${hatsB.id}`)).body.data).toMatchObject({ summary: { unchanged: 1, changed: 0 }, changes: [] });
  });
});
