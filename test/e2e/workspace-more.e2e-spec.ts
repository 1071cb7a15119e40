import ExcelJS from 'exceljs';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { api, corpusFile, newOrg, uploadFile, waitForDocument } from './support/harness';
import { HARD_HATS, riversideSitePlan, VISITORS } from './support/site-plan';
import { axeViolations, describeBrowser, describeViolations, openWorkspace, screenshot, type PageProblems } from './support/browser';

jest.setTimeout(600_000);

/**
 * The review workspace's later screens (issue 31 items 4, 6, 7), in headless Chromium against the
 * whole stack: check runs from a CSV and from an XLSX file (the column chosen on a preview), a
 * re-run after a new version of a document and the comparison of the two runs (the changed
 * requirement, its source in the evidence viewer), and questions in the Ask tab with citations
 * that open the viewer (the marked passage of a Markdown file, the highlighted lines of a PDF).
 * axe runs on each new screen; `workspace-run-from-file`, `workspace-run-labels`, `workspace-compare` and `workspace-ask` are
 * written to docs/screenshots/.
 */
const POAM = 'pdf/fedramp_guide_poam_rev5.pdf';
const PLAN_V1 = riversideSitePlan({ markdown: true, visitors: false });
const PLAN_V2 = riversideSitePlan({ markdown: true, visitors: true });

describeBrowser('review workspace: runs from files, re-run and compare, ask', () => {
  let browser: Browser;
  let page: Page;
  let problems: PageProblems;
  let key: string;
  let projectId: string;
  let planV1: string;
  let dir: string;
  let checklistRunId: string;

  async function expectAccessible(name: string) {
    const violations = await axeViolations(page, { impact: ['serious', 'critical'] });
    expect(describeViolations(violations).map((v) => `${name}: ${v}`)).toEqual([]);
  }
  async function processed(id: string) {
    await api(key)
      .post('/api/v2/documents/process')
      .send({ document_ids: [id] });
    expect((await waitForDocument(key, id, 300_000)).status).toBe('completed');
  }
  const runs = async () => (await api(key).get(`/api/v2/check/runs?project_id=${projectId}`)).body.data as any[];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'kb-workspace-'));
    ({ key } = newOrg('E2E Workspace more'));
    projectId = (await api(key).post('/api/v2/projects').send({ name: 'Riverside depot' })).body.data.id;
    // Corpus documents through the API (the upload screen has its own test): a site plan and a PDF.
    planV1 = await uploadFile(key, { bytes: Buffer.from(PLAN_V1), name: 'riverside-site-plan.md' }, projectId);
    const pdf = await uploadFile(key, { path: corpusFile(POAM) }, projectId);
    const ready = Promise.all([processed(planV1), processed(pdf)]);
    ({ browser, page, problems } = await openWorkspace());
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    await ready;
  });
  afterAll(async () => {
    await browser?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function newRunFromFile(file: string) {
    await page.goto(new URL(`/app/projects/${projectId}?tab=runs`, page.url()).toString());
    await page.getByRole('button', { name: 'New check run' }).click();
    const dialog = page.getByRole('dialog', { name: 'New check run' });
    await dialog.getByRole('tab', { name: 'From a file (CSV, XLSX)' }).click();
    await dialog.locator('input[type=file]').setInputFiles(file);
    await dialog.getByTestId('file-preview').waitFor();
    return dialog;
  }

  it('creates a run from a CSV: the header and the columns are guessed, the reference and the title are kept in metadata', async () => {
    const csv = path.join(dir, 'site-requirements.csv');
    writeFileSync(csv, `Ref,Title,Requirement,Owner\r\nSP-1,Visitors,${VISITORS},Reception\r\nSP-2,Head protection,"${HARD_HATS}",Site\r\n`);
    const dialog = await newRunFromFile(csv);
    // Guessed: the first row is a header, C holds the requirements, A the references, B the titles.
    expect(await dialog.getByLabel('The first row is a header (skipped)').isChecked()).toBe(true);
    expect(await dialog.getByLabel('Requirement column').inputValue()).toBe('2');
    expect(await dialog.getByLabel('Reference column (optional)').inputValue()).toBe('0');
    expect(await dialog.getByLabel('Title column (optional)').inputValue()).toBe('1');
    await dialog.getByRole('columnheader', { name: 'B (title)' }).waitFor();
    await dialog.getByTestId('file-count').filter({ hasText: '2 requirements from site-requirements.csv' }).waitFor();
    expect(await dialog.getByLabel('Name').inputValue()).toBe('site-requirements');
    await expectAccessible('new run from a file');
    await screenshot(page, 'workspace-run-from-file');
    await dialog.getByLabel('Skip the breakdown into sub-requirements (faster)').check();
    await dialog.getByRole('button', { name: 'Create and run' }).click();
    await page.getByTestId('run-status').filter({ hasText: 'completed' }).waitFor({ timeout: 120_000 });
    const run = (await runs()).find((r) => r.name === 'site-requirements');
    const reqs = (await api(key).get(`/api/v2/check/runs/${run.id}/requirements`)).body.data;
    expect(reqs.map((r: any) => [r.text, r.metadata])).toEqual([
      [VISITORS, { ref: 'SP-1', title: 'Visitors' }],
      [HARD_HATS, { ref: 'SP-2', title: 'Head protection' }],
    ]);
    // The check read each requirement with its title, unless the text already starts with it.
    expect(reqs.map((r: any) => r.sub_requirements.map((x: any) => x.text))).toEqual([[VISITORS], [`Head protection: ${HARD_HATS}`]]);
    // The plan states the titled requirement's text word for word: a confident pass, folded under the confident verdicts.
    expect(reqs[1].sub_requirements[0].status).toBe('comply');
    expect(reqs[1].sub_requirements[0].score).toBeGreaterThanOrEqual(0.9);
    // The run's page names each requirement by its reference and title, in the list and in the detail.
    await page.getByRole('button', { name: 'Confident verdicts (1)' }).click();
    await page.getByRole('button', { name: `2. SP-2 · Head protection — ${HARD_HATS}` }).click();
    await page.getByTestId('requirement-label').filter({ hasText: 'SP-2 · Head protection' }).waitFor();
    await page.getByTestId('evidence-pane').getByTestId('quote-mark').filter({ hasText: HARD_HATS }).waitFor({ timeout: 60_000 });
    await screenshot(page, 'workspace-run-labels');
  });

  it('creates a run from an XLSX: the person chooses the requirement column the guess got wrong; blank rows are skipped', async () => {
    const wb = new ExcelJS.Workbook();
    const ws = wb.addWorksheet('Checklist');
    ws.addRow(['Wording', 'Comment', 'Item']);
    ws.addRow([VISITORS, 'Added after the site visit of 12 March 2026 by the safety officer.', 'R-1']);
    ws.addRow([]);
    ws.addRow([HARD_HATS, "From the client's tender, annex B, section 3.2, on page 14.", 'R-2']);
    const xlsx = path.join(dir, 'checklist.xlsx');
    await wb.xlsx.writeFile(xlsx);
    const dialog = await newRunFromFile(xlsx);
    // The comments are the longest texts, so the guess takes them; the person picks column A.
    expect(await dialog.getByLabel('Requirement column').inputValue()).toBe('1');
    await dialog.getByLabel('Requirement column').selectOption({ label: 'A · Wording' });
    await dialog.getByLabel('Reference column (optional)').selectOption({ label: 'C · Item' });
    await dialog.getByRole('columnheader', { name: 'A (requirement)' }).waitFor();
    await dialog.getByRole('columnheader', { name: 'C (reference)' }).waitFor();
    await dialog.getByTestId('file-count').filter({ hasText: '2 requirements from checklist.xlsx' }).waitFor();
    await dialog.getByLabel('Skip the breakdown into sub-requirements (faster)').check();
    await dialog.getByRole('button', { name: 'Create and run' }).click();
    await page.getByTestId('run-status').filter({ hasText: 'completed' }).waitFor({ timeout: 120_000 });
    checklistRunId = (await runs()).find((r) => r.name === 'checklist').id;
    const reqs = (await api(key).get(`/api/v2/check/runs/${checklistRunId}/requirements`)).body.data;
    expect(reqs.map((r: any) => [r.text, r.metadata])).toEqual([
      [VISITORS, { ref: 'R-1' }],
      [HARD_HATS, { ref: 'R-2' }],
    ]);
  });

  it('re-runs after a new version of the site plan and compares: the visitors requirement changed from fail to pass, its new source opens in the viewer', async () => {
    const planV2 = await uploadFile(key, { bytes: Buffer.from(PLAN_V2), name: 'riverside-site-plan.md', replaces: planV1 }, projectId);
    await processed(planV2);
    // The run page (still the checklist run) offers the re-run.
    await page.getByRole('button', { name: 'Re-run' }).click();
    const rerun = page.getByRole('dialog', { name: 'Re-run this check' });
    await rerun.getByLabel('Skip the breakdown into sub-requirements (faster)').check();
    await rerun.getByRole('button', { name: 'Re-run now' }).click();
    await page.getByRole('heading', { name: 'checklist (rerun)' }).waitFor();
    await page.getByTestId('run-status').filter({ hasText: 'completed' }).waitFor({ timeout: 120_000 });

    await page.getByRole('button', { name: 'Compare with…' }).click();
    const compare = page.getByRole('dialog', { name: 'Compare with another run' });
    // The run it re-ran is offered first.
    expect(await compare.getByLabel('Run').inputValue()).toBe(checklistRunId);
    await compare.getByRole('button', { name: 'Compare' }).click();
    await page.getByRole('heading', { name: 'Compare runs' }).waitFor();
    expect(page.url()).toMatch(new RegExp(`/runs/${checklistRunId}/compare/[0-9a-f-]{36}$`));
    await page.getByTestId('compare-before').filter({ hasText: 'checklist' }).waitFor();
    await page.getByTestId('compare-after').filter({ hasText: 'checklist (rerun)' }).waitFor();
    expect(Number(await page.getByTestId('count-changed').locator('p').first().textContent())).toBeGreaterThanOrEqual(1);
    const change = page.getByTestId('change').filter({ hasText: VISITORS });
    expect(await change.getByTestId('outcome-before').getByTestId('outcome-result').textContent()).toBe('fail');
    expect(await change.getByTestId('outcome-after').getByTestId('outcome-result').textContent()).toBe('pass');
    // The after side's first source is the new version: its passage opens with the quote marked.
    await change.getByTestId('outcome-after').getByTestId('source').first().click();
    const mark = page.getByTestId('evidence-pane').getByTestId('quote-mark');
    await mark.waitFor({ timeout: 60_000 });
    expect(await mark.textContent()).toContain('Visitors must sign in');
    await expectAccessible('compare');
    await screenshot(page, 'workspace-compare');
  });

  it('asks in the Ask tab: answers stream in with citations; a Markdown citation shows its marked passage, a PDF citation its highlighted lines; nothing found is said plainly', async () => {
    await page.goto(new URL(`/app/projects/${projectId}`, page.url()).toString());
    await page.getByRole('tab', { name: 'Ask' }).click();
    await expectAccessible('ask (empty)');
    // By keyboard: Enter sends the question.
    await page.getByLabel('Question').fill('What must visitors do at the reception desk?');
    await page.getByLabel('Question').press('Enter');
    const first = page.getByTestId('answer').nth(0);
    await first.and(page.locator('[data-state="done"]')).waitFor({ timeout: 60_000 });
    const planCitation = first.getByTestId('citation').filter({ hasText: 'riverside-site-plan.md' }).first();
    await planCitation.waitFor();
    // A citation opens by keyboard too.
    await planCitation.focus();
    await page.keyboard.press('Enter');
    const mark = page.getByTestId('evidence-pane').getByTestId('quote-mark');
    await mark.waitFor({ timeout: 60_000 });
    expect(await mark.textContent()).toContain('Visitors must sign in');

    // A follow-up about the PDF: its [n] marker opens the page with the quote's lines highlighted.
    await page.getByLabel('Follow-up question').fill('In which formats must the FedRAMP OSCAL Registry be offered?');
    await page.getByRole('button', { name: 'Ask' }).click();
    const second = page.getByTestId('answer').nth(1);
    await second.and(page.locator('[data-state="done"]')).waitFor({ timeout: 60_000 });
    await second
      .getByRole('button', { name: /^Citation \d+: fedramp_guide_poam_rev5\.pdf$/ })
      .first()
      .click();
    await page.getByTestId('evidence-pane').getByTestId('highlight').first().waitFor({ timeout: 60_000 });
    await page.locator('[data-testid="pdf-page"][data-rendered="true"]').waitFor({ timeout: 60_000 });
    await expectAccessible('ask');
    await screenshot(page, 'workspace-ask');

    // Nothing in the documents: said plainly, nothing cited.
    await page.getByLabel('Follow-up question').fill('What is the airspeed velocity of an unladen swallow?');
    await page.getByLabel('Follow-up question').press('Enter');
    const third = page.getByTestId('answer').nth(2);
    await third.and(page.locator('[data-state="done"]')).waitFor({ timeout: 60_000 });
    await third.getByTestId('not-found').waitFor();
    expect(await third.getByTestId('citation').count()).toBe(0);

    // The conversation stays while the person looks at another tab.
    await page.getByRole('tab', { name: 'Documents' }).click();
    await page.getByRole('table', { name: 'Documents' }).waitFor();
    await page.getByRole('tab', { name: 'Ask' }).click();
    // The tab's panel mounts after the click: wait for it before counting (CI counted an empty panel).
    await page.getByRole('log', { name: 'Conversation' }).waitFor();
    await page.getByTestId('turn').nth(2).waitFor();
    expect(await page.getByTestId('turn').count()).toBe(3);
    expect(problems.consoleErrors).toEqual([]);
    expect(problems.failedRequests).toEqual([]);
  });
});
