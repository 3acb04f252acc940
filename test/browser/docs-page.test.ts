/**
 * The reference page at /docs in a real browser (Debian's Chromium driven by playwright-core):
 * it renders the title and every operation of /openapi.json, expands a route's parameters and
 * schemas on click, logs no console error (a CSP violation is one), and requests nothing from
 * any host but the loopback server it came from.
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../e2e/support.ts';

const CHROMIUM = process.env.COURIER_TEST_CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

interface Operation {
  operationId: string;
  summary?: string;
  parameters?: { name: string; in: string; required?: boolean }[];
  requestBody?: { content: { 'application/json': { schema: { $ref?: string } } } };
  responses: Record<string, { description?: string }>;
}
interface OpenApi {
  info: { title: string; version: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
}

describe('API reference page in Chromium', () => {
  let api: TestApi;
  let browser: Browser;
  let page: Page;
  let doc: OpenApi;
  let shots: string;
  const requested: string[] = [];
  const consoleErrors: string[] = [];

  // A failed set-up (no Chromium, no PostgreSQL) fails every test with its message: a failing
  // beforeAll would only mark them skipped, which a summary of failed tests does not count.
  let setupError: unknown;
  beforeEach(() => {
    if (setupError) throw setupError;
  });

  beforeAll(async () => {
    try {
      await setUp();
    } catch (error) {
      setupError = error;
    }
  }, 60_000);

  async function setUp(): Promise<void> {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `Chromium is not installed at ${CHROMIUM}: this test needs it ` +
          '(apt-get install -y chromium; .ci/run installs it when missing)',
      );
    }
    shots = join(tmpdir(), 'courier-docs-screenshots');
    await mkdir(shots, { recursive: true });
    api = await startApi();
    doc = (await api.request('GET', '/openapi.json', { token: null })).body;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('request', (request) => requested.push(request.url()));
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(`uncaught: ${error.message}`));
    const response = await page.goto(`${api.url}/docs`);
    expect(response?.status()).toBe(200);
    await page.locator('#ops section.op').first().waitFor({ timeout: 10_000 });
  }

  afterAll(async () => {
    await browser?.close();
    await api?.close();
  });

  const operations = (): [string, string, Operation][] =>
    Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]): [string, string, Operation] => [path, method, op]),
    );

  it('shows the API title and description', async () => {
    await expect
      .poll(() => page.locator('#title').textContent())
      .toBe(`${doc.info.title} ${doc.info.version}`);
    expect(await page.title()).toBe('Courier API reference');
    const intro = await page.locator('#intro').textContent();
    expect(intro).not.toMatch(/Loading|Could not load/);
    expect(await page.locator('#intro').isVisible()).toBe(true);
    // The description's Markdown code spans render as code, not as literal backticks.
    expect(await page.locator('#intro code').allTextContents()).toContain('Authorization: Bearer <token>');
    for (const part of ['nav', 'main']) expect(await page.locator(part).textContent()).not.toContain('`');
    await page.screenshot({ path: join(shots, 'top.png') });
  });

  it('lists every operation of /openapi.json, in the side bar and in the body', async () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThan(30);
    // Anchors must be unique, or a side-bar link would lead to the wrong operation.
    expect(new Set(ops.map(([, , op]) => op.operationId)).size).toBe(ops.length);

    const rendered = await page.locator('#ops section.op').evaluateAll((sections) =>
      sections.map((s) => ({
        id: s.id,
        method: s.querySelector('h3 .method')?.textContent ?? '',
        path: s.querySelector('h3 code')?.textContent ?? '',
      })),
    );
    expect(rendered.length).toBe(ops.length);
    expect(rendered.map((r) => `${r.method} ${r.path}`).sort()).toEqual(
      ops.map(([path, method]) => `${method.toUpperCase()} ${path}`).sort(),
    );
    for (const [path, method, op] of ops) {
      expect(rendered.find((r) => r.id === op.operationId)).toEqual({
        id: op.operationId,
        method: method.toUpperCase(),
        path,
      });
    }

    const links = await page.locator('#nav li a').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    expect(links.sort()).toEqual(ops.map(([, , op]) => `#${op.operationId}`).sort());
    // Every tag heads a group in the side bar.
    const tags = new Set(ops.map(([, , op]) => (op as { tags?: string[] }).tags?.[0] ?? 'Other'));
    const headings = await page.locator('#nav h2').allTextContents();
    expect(new Set(headings)).toEqual(tags);
  });

  it('shows a route’s parameters, request body and response schemas when clicked', async () => {
    const op = doc.paths['/api/v1/app/{app_id}/msg']!.post!;
    const card = page.locator(`section.op[id="${op.operationId}"]`);

    await page.locator(`#nav a[href="#${op.operationId}"]`).click();
    await expect.poll(() => new URL(page.url()).hash).toBe(`#${op.operationId}`);
    await expect.poll(() => card.locator('h3').isVisible()).toBe(true);
    expect(await card.locator('h3').boundingBox()).toMatchObject({ y: expect.any(Number) });
    const top = (await card.boundingBox())!.y;
    expect(top).toBeGreaterThanOrEqual(-1);
    expect(top).toBeLessThan(900);

    // Parameters: every documented one, with where it goes.
    const params = await card
      .locator('h4:text-is("Parameters") + table tr')
      .evaluateAll((rows) =>
        rows
          .slice(1)
          .map((r) => [...r.querySelectorAll(':scope > td')].slice(0, 2).map((c) => c.textContent)),
      );
    expect(params.map(([name, where]) => [name?.replace(/ \*$/, ''), where])).toEqual(
      op.parameters!.map((p) => [p.name, p.in]),
    );
    // A pattern reads as the regular expression itself, not as a JSON string with doubled escapes.
    const pattern = (op.parameters![0] as { schema?: { pattern?: string } }).schema?.pattern;
    expect(pattern).toContain('\\');
    expect(await card.locator('h4:text-is("Parameters") + table').textContent()).toContain(
      `pattern: ${pattern}`,
    );

    // Request body: the schema's name and every property, visible without a click.
    const bodyName = op.requestBody!.content['application/json'].schema.$ref!.split('/').pop()!;
    const body = card.locator('h4:has-text("Request body") + .schema');
    expect(await body.locator('.name').first().textContent()).toBe(bodyName);
    const fields = Object.keys(doc.components.schemas[bodyName]!.properties!);
    expect(fields).toEqual(expect.arrayContaining(['eventType', 'payload']));
    for (const field of fields)
      expect(await body.locator(`td > code:text-is("${field}")`).isVisible()).toBe(true);

    // Responses: one per status, collapsed; a click shows the 202 body's schema.
    const summaries = await card.locator('details.resp > summary b').allTextContents();
    expect(summaries).toEqual(Object.keys(op.responses));
    const accepted = card.locator('details.resp', { has: page.locator('summary b:text-is("202")') });
    const acceptedFields = accepted.locator('td > code:text-is("eventType")');
    expect(await acceptedFields.isVisible()).toBe(false);
    // Its own summary, not a nested object's (the message's statusCounts).
    await accepted.locator('> summary').click();
    expect(await accepted.getAttribute('open')).not.toBeNull();
    expect(await acceptedFields.isVisible()).toBe(true);
    await card.screenshot({ path: join(shots, 'send-message.png') });

    // A nested object opens on click too (an endpoint's nested fields, e.g. in its list answer).
    const nested = page.locator('#ops details:not(.resp) > summary').first();
    if ((await nested.count()) > 0) {
      const parent = nested.locator('xpath=..');
      const resp = parent.locator('xpath=ancestor::details[contains(@class,"resp")]');
      if ((await resp.count()) > 0) await resp.locator(':scope > summary').click();
      await nested.click();
      expect(await parent.getAttribute('open')).not.toBeNull();
    }
  });

  it('logs no console error and requests nothing outside the loopback server', async () => {
    expect(consoleErrors).toEqual([]);
    const origin = new URL(api.url).origin;
    expect(requested.length).toBeGreaterThanOrEqual(2);
    expect(requested.filter((url) => new URL(url).origin !== origin)).toEqual([]);
    expect(requested).toContain(`${origin}/openapi.json`);
  });

  it('lays out legibly (screenshots for a person to look at)', async () => {
    // Dark text at a readable size, a main column with room, nothing wider than the window, and a
    // side bar that scrolls on its own when it is taller than the window.
    const style = (selector: string, property: string) =>
      page
        .locator(selector)
        .first()
        .evaluate((el, p) => el.ownerDocument.defaultView.getComputedStyle(el).getPropertyValue(p), property);
    const rgb = (await style('body', 'color')).match(/\d+/g)!.map(Number);
    expect(Math.max(...rgb.slice(0, 3))).toBeLessThan(80);
    expect(await style('body', 'font-size')).toBe('14px');
    expect((await page.locator('main').boundingBox())!.width).toBeGreaterThan(600);
    expect(await page.locator('html').evaluate((el) => el.scrollWidth)).toBeLessThanOrEqual(1280);
    const nav = await page.locator('nav').evaluate((el) => [el.scrollHeight, el.clientHeight]);
    if (nav[0] > nav[1]) expect(await style('nav', 'overflow-y')).toMatch(/auto|scroll/);
    console.log(`reference page screenshots: ${shots}/top.png, ${shots}/send-message.png`);
  });
});
