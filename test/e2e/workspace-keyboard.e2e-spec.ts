import type { Browser, Page } from 'playwright-core';
import { api, corpusFile, newOrg, uploadFile, waitForDocument, waitForRun } from './support/harness';
import { axeViolations, describeBrowser, describeViolations, openWorkspace, type PageProblems } from './support/browser';

jest.setTimeout(600_000);

/**
 * The review workspace with the keyboard only (issue 31 item 8, "keyboard only works end to end"):
 * from the sign-in page to a recorded review and back out, without a mouse event. Each control is
 * reached with Tab (at most {@link MAX_TABS} presses from wherever the focus is) and used with
 * Enter or the review's shortcut keys; a control Tab never reaches fails the test.
 */
const POLICY = 'markdown/datica_07-systems_access_policy.md';
const VPN = 'VPN sessions must be disconnected after 30 minutes of inactivity.';
const MAX_TABS = 60;

/** Presses Tab until the focused element's accessible text matches `name`; returns how many presses it took. */
async function tabTo(page: Page, name: RegExp): Promise<number> {
  for (let i = 1; i <= MAX_TABS; i++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const el = (globalThis as unknown as { document: { activeElement: { textContent: string | null; getAttribute(n: string): string | null } | null } })
        .document.activeElement;
      return el ? `${el.getAttribute('aria-label') ?? ''} ${el.textContent ?? ''}`.trim() : '';
    });
    if (name.test(focused)) return i;
  }
  throw new Error(`Tab did not reach a control named ${name} in ${MAX_TABS} presses`);
}

describeBrowser('review workspace with the keyboard only', () => {
  let browser: Browser;
  let page: Page;
  let problems: PageProblems;
  let key: string;
  let runId: string;

  beforeAll(async () => {
    ({ key } = newOrg('E2E Keyboard'));
    const projectId = (await api(key).post('/api/v2/projects').send({ name: 'Keyboard project' })).body.data.id;
    const doc = await uploadFile(key, { path: corpusFile(POLICY) }, projectId);
    await api(key)
      .post('/api/v2/documents/process')
      .send({ document_ids: [doc] });
    expect((await waitForDocument(key, doc)).status).toBe('completed');
    runId = (
      await api(key)
        .post('/api/v2/check/runs')
        .send({ project_id: projectId, name: 'Access review', requirements: [{ text: VPN }] })
    ).body.data.id;
    await api(key).post(`/api/v2/check/runs/${runId}/trigger`).send({ skip_breakdown: true });
    expect((await waitForRun(key, runId)).status).toBe('completed');
    ({ browser, page, problems } = await openWorkspace());
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('signs in, opens the project, its runs and the run, records a review and signs out, all from the keyboard', async () => {
    await page.waitForURL(/\/app\/sign-in$/);
    // The key field takes the focus when the page mounts. The URL changes one render before that
    // (the redirect to /sign-in is itself a render), so keys typed at once could go to the body:
    // the test waits for the focus instead of assuming it (seen once on a loaded CI machine).
    const field = page.getByLabel('API key');
    await field.waitFor();
    await page.waitForFunction(
      (el) => el !== null && (el as unknown as { ownerDocument: { activeElement: unknown } }).ownerDocument.activeElement === el,
      await field.elementHandle(),
    );
    await page.keyboard.type(key);
    expect(await field.inputValue()).toBe(key);
    await page.keyboard.press('Enter');
    // Projects, or the sign-in page's own error (said in the failure instead of a bare timeout).
    await page.getByRole('heading', { name: 'Projects' }).or(page.getByRole('alert')).waitFor();
    expect(await page.getByRole('alert').allTextContents()).toEqual([]);

    await tabTo(page, /^Keyboard project/);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Keyboard project' }).waitFor();

    // Tabs are one stop in the Tab order (WAI-ARIA tabs: roving focus); the arrow keys move between them.
    await tabTo(page, /^Documents$/);
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('Enter');
    await page.getByRole('table', { name: 'Check runs' }).waitFor();
    await tabTo(page, /^Access review$/);
    await page.keyboard.press('Enter');
    await page.getByTestId('requirement-text').filter({ hasText: VPN }).waitFor();

    // The review's shortcut keys, then the reviewer's name in its dialog (asked once), submitted with Enter.
    await page.keyboard.press('f');
    await page.getByLabel('Reviewer').waitFor();
    await page.keyboard.type('Kim Keyboard');
    await page.keyboard.press('Enter');
    await page.getByTestId('review').filter({ hasText: 'Reviewed fail by Kim Keyboard' }).waitFor();
    const [requirement] = (await api(key).get(`/api/v2/check/runs/${runId}/requirements`)).body.data;
    expect(requirement.review).toMatchObject({ decision: 'fail', reviewer: 'Kim Keyboard' });
    // The evidence pane and its page switcher or text are reachable too.
    await tabTo(page, /Evidence/);
    expect(describeViolations(await axeViolations(page, { impact: ['serious', 'critical'] }))).toEqual([]);

    await tabTo(page, /^Sign out$/);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(problems.consoleErrors).toEqual([]);
    expect(problems.failedRequests).toEqual([]);
  });
});
