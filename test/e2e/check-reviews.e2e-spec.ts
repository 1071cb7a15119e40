import { Webhook } from 'standardwebhooks';
import { api, createProject, newOrg, processDocuments, uploadFile, waitForRun } from './support/harness';
import { startReceiver } from './support/webhook-receiver';

jest.setTimeout(600_000);

/**
 * Reviews of check results end to end (decisions.md "Review of check results", docs/check.md
 * "Reviews"): a person's pass/fail next to each machine verdict, through the real stack — gateway
 * validation and envelope, the check service's rules (404/409), `review_summary`, `outdated` after a
 * re-check, and the `check_run.requirement_reviewed` webhook delivered from the outbox.
 */
const PLAN = `Riverside Depot Safety Plan

Visitors must sign in at the reception desk before entering the depot.
Hard hats are required at all times in the loading zone.
Fire extinguishers shall be inspected every 30 days.
`;

describe('reviews of check results', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let key: string;
  let orgId: string;
  let projectId: string;
  let secret: string;
  let run: any;
  let reqs: any[];

  const path = (runId: string, requirementId: string) => `/api/v2/check/runs/${runId}/requirements/${requirementId}/review`;
  const put = (body: object, runId = run.id, requirementId = reqs[0].id, k = key) => api(k).put(path(runId, requirementId)).send(body);

  beforeAll(async () => {
    receiver = await startReceiver();
    ({ key, orgId } = newOrg('E2E Reviews'));
    const hook = await api(key)
      .post('/api/v2/webhooks')
      .send({ url: receiver.url('/reviews'), events: ['check_run.requirement_reviewed'] });
    expect(hook.status).toBe(201);
    secret = hook.body.data.secret;
    projectId = await createProject(key, 'Riverside');
    const planId = await uploadFile(key, { bytes: Buffer.from(PLAN), name: 'riverside-plan.txt', contentType: 'text/plain' }, projectId);
    await processDocuments(key, [planId]);
    const created = await api(key)
      .post('/api/v2/check/runs')
      .send({
        project_id: projectId,
        name: 'Review me',
        requirements: [
          { text: 'Visitors must sign in at the reception desk.' },
          { text: 'Fire extinguishers shall be inspected every 30 days.' },
          { text: 'Forklift drivers must hold a valid licence.' },
        ],
      });
    expect(created.status).toBe(201);
    expect(created.body.data.review_summary).toEqual({ reviewed: 0, passed: 0, failed: 0 });
    expect((await api(key).post(`/api/v2/check/runs/${created.body.data.id}/trigger`).send({ skip_breakdown: true })).status).toBe(200);
    run = await waitForRun(key, created.body.data.id, ['completed']);
    reqs = run.requirements;
    expect(reqs.every((r: any) => r.status === 'completed' && r.review === null)).toBe(true);
  });
  afterAll(async () => {
    await receiver?.close();
  });

  it('PUT records a review (200, the requirement with it); run detail, requirements and lists show it; the summary counts by it', async () => {
    const machine = { passed: run.passed_requirements, failed: run.failed_requirements };
    expect(run.review_summary).toEqual({ reviewed: 0, ...machine });
    const target = reqs[0];
    const machinePassed = target.sub_requirements.length > 0 && target.sub_requirements.every((s: any) => s.status === 'comply');
    const decision = machinePassed ? 'fail' : 'pass';
    const res = await put({ decision, reviewer: 'Dana Reviewer', comment: 'The plan cited is out of date.' });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.data).toMatchObject({ id: target.id, run_id: run.id, status: 'completed', text: target.text, sub_requirements: target.sub_requirements });
    expect(res.body.data.review).toEqual({
      decision,
      comment: 'The plan cited is out of date.',
      reviewer: 'Dana Reviewer',
      reviewed_at: expect.any(String),
      outdated: false,
    });
    expect(new Date(res.body.data.review.reviewed_at).toISOString()).toBe(res.body.data.review.reviewed_at);

    const shift = machinePassed ? { passed: machine.passed - 1, failed: machine.failed + 1 } : { passed: machine.passed + 1, failed: machine.failed - 1 };
    const detail = (await api(key).get(`/api/v2/check/runs/${run.id}`)).body.data;
    expect(detail.requirements[0].review).toEqual(res.body.data.review);
    expect(detail.requirements.slice(1).every((r: any) => r.review === null)).toBe(true);
    expect(detail.review_summary).toEqual({ reviewed: 1, ...shift });
    // The machine's counters do not change.
    expect({ passed: detail.passed_requirements, failed: detail.failed_requirements }).toEqual(machine);
    const listed = (await api(key).get(`/api/v2/check/runs/${run.id}/requirements`)).body.data;
    expect(listed[0].review).toEqual(res.body.data.review);
    const runs = (await api(key).get(`/api/v2/check/runs?project_id=${projectId}`)).body.data;
    expect(runs.find((r: any) => r.id === run.id).review_summary).toEqual({ reviewed: 1, ...shift });

    // Replacing it is allowed; a comment may be left out (null).
    const replaced = await put({ decision: machinePassed ? 'pass' : 'fail', reviewer: 'Lee' });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data.review).toMatchObject({ decision: machinePassed ? 'pass' : 'fail', reviewer: 'Lee', comment: null, outdated: false });
    expect((await api(key).get(`/api/v2/check/runs/${run.id}`)).body.data.review_summary).toEqual({ reviewed: 1, ...machine });
  });

  it('DELETE removes the review (204, review null) and is idempotent', async () => {
    const target = reqs[1];
    expect((await put({ decision: 'pass', reviewer: 'Dana' }, run.id, target.id)).status).toBe(200);
    const del = await api(key).delete(path(run.id, target.id));
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    const listed = (await api(key).get(`/api/v2/check/runs/${run.id}/requirements`)).body.data;
    expect(listed.find((r: any) => r.id === target.id).review).toBeNull();
    expect((await api(key).delete(path(run.id, target.id))).status).toBe(204);
  });

  it('400 in the error envelope for an invalid body, never a 500', async () => {
    for (const [body, field] of [
      [{ decision: 'maybe', reviewer: 'Dana' }, 'decision'],
      [{ reviewer: 'Dana' }, 'decision'],
      [{ decision: 'pass' }, 'reviewer'],
      [{ decision: 'pass', reviewer: '' }, 'reviewer'],
      [{ decision: 'pass', reviewer: '   ' }, 'reviewer'],
      [{ decision: 'pass', reviewer: 'x'.repeat(201) }, 'reviewer'],
      [{ decision: 'pass', reviewer: 42 }, 'reviewer'],
      [{ decision: 'pass', reviewer: 'Dana', comment: 'c'.repeat(2001) }, 'comment'],
      [{ decision: 'pass', reviewer: 'Dana', comment: 7 }, 'comment'],
    ] as const) {
      const res = await put(body);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' }, request_id: expect.any(String) });
      expect(res.body.error.message).toContain(field);
    }
    // The limits themselves are accepted.
    const edge = await put({ decision: 'fail', reviewer: 'x'.repeat(200), comment: 'c'.repeat(2000) });
    expect(edge.status).toBe(200);
    expect(edge.body.data.review.comment).toHaveLength(2000);
    expect((await api(key).put(path('not-a-uuid', reqs[0].id)).send({ decision: 'pass', reviewer: 'Dana' })).status).toBe(400);
    expect((await api(key).put(path(run.id, 'not-a-uuid')).send({ decision: 'pass', reviewer: 'Dana' })).status).toBe(400);
  });

  it("404 for another organization's run and for an unknown requirement; 409 for a requirement not completed", async () => {
    const other = newOrg('E2E Reviews other');
    for (const res of [
      await put({ decision: 'pass', reviewer: 'Eve' }, run.id, reqs[0].id, other.key),
      await api(other.key).delete(path(run.id, reqs[0].id)),
      await put({ decision: 'pass', reviewer: 'Dana' }, run.id, '00000000-0000-4000-8000-000000000000'),
      await api(key).delete(path(run.id, '00000000-0000-4000-8000-000000000000')),
      await put({ decision: 'pass', reviewer: 'Dana' }, '00000000-0000-4000-8000-000000000000', reqs[0].id),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
    // The other organization's attempt changed nothing.
    const mine = (await api(key).get(`/api/v2/check/runs/${run.id}/requirements`)).body.data;
    expect(mine[0].review?.reviewer).not.toBe('Eve');

    const pending = await api(key)
      .post('/api/v2/check/runs')
      .send({ project_id: projectId, name: 'Never triggered', requirements: [{ text: 'Anything at all.' }] });
    const pendingReq = (await api(key).get(`/api/v2/check/runs/${pending.body.data.id}/requirements`)).body.data[0];
    for (const res of [
      await put({ decision: 'pass', reviewer: 'Dana' }, pending.body.data.id, pendingReq.id),
      await api(key).delete(path(pending.body.data.id, pendingReq.id)),
    ]) {
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ success: false, error: { code: 'CONFLICT' } });
    }
  });

  it('a review becomes outdated when the requirement is checked again (re-trigger with reprocess)', async () => {
    const target = reqs[2];
    expect((await put({ decision: 'pass', reviewer: 'Dana' }, run.id, target.id)).status).toBe(200);
    const before = (await api(key).get(`/api/v2/check/runs/${run.id}`)).body.data.review_summary.reviewed;
    expect((await api(key).post(`/api/v2/check/runs/${run.id}/trigger`).send({ reprocess: true, skip_breakdown: true })).status).toBe(200);
    const done = await waitForRun(key, run.id, ['completed']);
    const after = done.requirements.find((r: any) => r.id === target.id);
    expect(after.review).toMatchObject({ decision: 'pass', reviewer: 'Dana', outdated: true });
    expect(done.requirements.filter((r: any) => r.review).every((r: any) => r.review.outdated)).toBe(true);
    // Outdated reviews count no more: the summary is the machine's again.
    expect(done.review_summary).toEqual({ reviewed: 0, passed: done.passed_requirements, failed: done.failed_requirements });
    expect(before).toBeGreaterThan(0);
    // A new review is current.
    const fresh = await put({ decision: 'fail', reviewer: 'Dana' }, run.id, target.id);
    expect(fresh.body.data.review.outdated).toBe(false);
  });

  it('delivers check_run.requirement_reviewed, signed, with the requirement and its review as data', async () => {
    await receiver.waitFor((all) => all.filter((r) => r.event?.type === 'check_run.requirement_reviewed').length >= 5, 60_000, 'review events');
    const got = receiver.at('/reviews').map((r) => new Webhook(secret).verify(r.body, r.headers) as any);
    expect(got.every((e) => e.type === 'check_run.requirement_reviewed' && e.org_id === orgId)).toBe(true);
    const first = got.find((e) => e.data.id === reqs[0].id && e.data.review?.reviewer === 'Dana Reviewer');
    expect(first).toBeDefined();
    expect(first.data).toMatchObject({
      id: reqs[0].id,
      run_id: run.id,
      status: 'completed',
      text: reqs[0].text,
      review: { comment: 'The plan cited is out of date.', outdated: false },
    });
    expect(Array.isArray(first.data.sub_requirements)).toBe(true);
    // The removal is an event too, with review null.
    expect(got.some((e) => e.data.id === reqs[1].id && e.data.review === null)).toBe(true);
  });
});
