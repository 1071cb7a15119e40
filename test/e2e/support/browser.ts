/**
 * Browser tests of the review workspace (issue 31): a real headless Chromium (Debian's `chromium`
 * package, installed by tools/lib/bootstrap.mjs and .ci/run; never downloaded at test time) driven
 * by playwright-core, with axe-core for accessibility checks.
 *
 * Browser tests run on the newest Node line only: CI runs `npm test` again on Node 22
 * (`KB_NODE_VERSION=22.23.3`, .ci/run), and a browser adds nothing there. {@link browserSkipReason}
 * says why they are skipped on a machine; the tests print it and skip.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { AxeResults, ImpactValue, Result } from 'axe-core';
import { chromium, type Browser, type Page } from 'playwright-core';
import { baseUrl, FIRST_LINE_NODE, ROOT } from './harness';

/** The Chromium binary: KB_CHROMIUM, else Debian's /usr/bin/chromium. */
export const CHROMIUM = process.env.KB_CHROMIUM ?? '/usr/bin/chromium';

/** Oldest Node major the browser tests run on (the line CI runs first; tools/lib/node-runtime.mjs NODE_LTS_VERSION). */
export const BROWSER_TESTS_MIN_NODE = FIRST_LINE_NODE;

/**
 * Chromium's flags for a headless run on a CI machine or a container: no sandbox (containers run
 * as root without user namespaces), no GPU, and none of the background traffic a fresh profile
 * starts (component updates, sync, field trials, QUIC probes) on a machine that may be offline.
 * Playwright adds its own (a fresh temporary `--user-data-dir` per launch, `--remote-debugging-pipe`).
 */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Viewport of {@link openWorkspace}: a laptop screen, in CSS pixels. */
export const VIEWPORT = { width: 1280, height: 800 };

/**
 * Why browser tests cannot run here, or null when they can: Node older than
 * {@link BROWSER_TESTS_MIN_NODE} (the second CI line), or no Chromium at {@link CHROMIUM}.
 */
export function browserSkipReason(): string | null {
  const major = Number(process.versions.node.split('.')[0]);
  if (major < BROWSER_TESTS_MIN_NODE)
    return `browser tests run on Node ${BROWSER_TESTS_MIN_NODE}+ only (this is Node ${process.versions.node}, the second CI line)`;
  if (!existsSync(CHROMIUM)) return `no Chromium at ${CHROMIUM}: install Debian's chromium package (npm test does so as root) or set KB_CHROMIUM`;
  return null;
}

/**
 * `describe` when browser tests can run here, else `describe.skip` after printing the reason once
 * (so a skipped browser suite is visible in the test output).
 */
export function describeBrowser(name: string, fn: () => void): void {
  const reason = browserSkipReason();
  if (reason) {
    process.stdout.write(`skipping "${name}": ${reason}\n`);
    describe.skip(`${name} (skipped: ${reason})`, fn);
  } else describe(name, fn);
}

/** What went wrong in the page while a test drove it: console errors, uncaught exceptions, failed or 4xx/5xx requests. */
export interface PageProblems {
  /** `console.error` messages (CSP violations included) and uncaught exceptions, with their source URL where known. */
  consoleErrors: string[];
  /** Requests that failed (network, blocked) or were answered 400 or more: `METHOD URL → status or reason`. */
  failedRequests: string[];
}

/** An open workspace: the browser (close it in afterAll), its page, and what went wrong so far (live arrays). */
export interface Workspace {
  browser: Browser;
  page: Page;
  problems: PageProblems;
}

/**
 * Launches Chromium ({@link CHROMIUM}, {@link CHROMIUM_ARGS}) and opens `path` of the suite's
 * gateway (default `/app/`) in a {@link VIEWPORT} page, waiting for the network to go idle.
 * Console errors, page errors and failed requests are collected from the start in `problems`.
 * @throws when Chromium cannot start or the page does not load within 30 s.
 */
export async function openWorkspace(route = '/app/', url: string = baseUrl()): Promise<Workspace> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: 60_000 });
  try {
    const context = await browser.newContext({ viewport: VIEWPORT, locale: 'en-US', colorScheme: 'light' });
    const page = await context.newPage();
    const problems: PageProblems = { consoleErrors: [], failedRequests: [] };
    page.on('console', (m) => {
      if (m.type() === 'error') problems.consoleErrors.push(`${m.text()}${m.location().url ? ` (${m.location().url})` : ''}`);
    });
    page.on('pageerror', (e) => problems.consoleErrors.push(`uncaught: ${e.message}`));
    page.on('requestfailed', (r) => problems.failedRequests.push(`${r.method()} ${r.url()} → ${r.failure()?.errorText ?? 'failed'}`));
    page.on('response', (r) => {
      if (r.status() >= 400) problems.failedRequests.push(`${r.request().method()} ${r.url()} → ${r.status()}`);
    });
    await page.goto(new URL(route, url).toString(), { waitUntil: 'networkidle', timeout: 30_000 });
    return { browser, page, problems };
  } catch (e) {
    await browser.close();
    throw e;
  }
}

/** Path of axe-core's browser build (node_modules/axe-core/axe.min.js), injected into pages by {@link axeViolations}. */
const AXE_SCRIPT = require.resolve('axe-core/axe.min.js');
let axeSource: string | undefined;

/**
 * Runs axe-core (WCAG 2.x A/AA rules and best practices, axe's defaults) on the page as it is now
 * and returns the violations whose impact is in `options.impact` (default: all).
 * axe is evaluated through the DevTools protocol rather than added as a `<script>` element
 * (`page.addScriptTag`): the workspace's CSP refuses inline scripts, and must stay as it ships.
 * @returns axe's violation objects (id, impact, help, nodes with their selectors).
 */
export async function axeViolations(page: Page, options: { impact?: ImpactValue[] } = {}): Promise<Result[]> {
  // The functions below run in the page (no DOM types here: the tests compile for Node).
  const present = await page.evaluate(() => typeof (globalThis as { axe?: unknown }).axe !== 'undefined');
  if (!present) await page.evaluate((axeSource ??= readFileSync(AXE_SCRIPT, 'utf8')));
  const results = await page.evaluate(() => (globalThis as unknown as { axe: { run: () => Promise<AxeResults> } }).axe.run());
  return results.violations.filter((v) => !options.impact || (v.impact != null && options.impact.includes(v.impact)));
}

/** One line per violation and node, for a readable test failure: `rule (impact): help: selector`. */
export function describeViolations(violations: Result[]): string[] {
  return violations.flatMap((v) => v.nodes.map((n) => `${v.id} (${v.impact}): ${v.help}: ${n.target.join(' ')}`));
}

/** Folder of the screenshots the README links (committed). */
export const SCREENSHOTS_DIR = path.join(ROOT, 'docs/screenshots');

/**
 * Saves the page's viewport as docs/screenshots/<name>.png (a PNG, {@link VIEWPORT} in size).
 * @param name file name without extension: lower-case letters, digits and dashes.
 * @returns the written file's path.
 * @throws when `name` is not such a name.
 */
export async function screenshot(page: Page, name: string): Promise<string> {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(name)) throw new Error(`screenshot name must be lower-case letters, digits and dashes: ${JSON.stringify(name)}`);
  mkdirSync(SCREENSHOTS_DIR, { recursive: true });
  const file = path.join(SCREENSHOTS_DIR, `${name}.png`);
  await page.screenshot({ path: file, animations: 'disabled', caret: 'hide' });
  return file;
}
