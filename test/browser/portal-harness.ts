/**
 * What the app portal's browser tests share: a real API, a loopback receiver, a virtual-time worker
 * and Debian's Chromium (driven by playwright-core), a fresh application with two event types and a
 * fresh browser context for each test. After each test it checks that the page logged no console
 * error (a CSP violation is one) and requested nothing from any host but the server it came from.
 * The bindings below are live: each test reads the ones its set-up assigned.
 */
import { existsSync } from 'node:fs';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { createApp, startApi, type TestApi } from '../e2e/support.ts';
import { virtualWorker } from '../support/engine.ts';

const CHROMIUM = process.env.COURIER_TEST_CHROMIUM ?? '/usr/bin/chromium';
/** The browser's globals the tests read (the project's TypeScript has no DOM types). */
export interface Tab {
  document: {
    getElementById(id: string): { getAttribute(name: string): string | null } | null;
    activeElement: { textContent: string | null; getAttribute(name: string): string | null } | null;
  };
  sessionStorage: { getItem(key: string): string | null };
}
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
];

export let api: TestApi;
export let receiver: Receiver;
export let page: Page;
export let engine: ReturnType<typeof virtualWorker>;
export let appId: string;
let browser: Browser;
let context: BrowserContext;
/** Every request the page made in the current test. */
export const requested: { method: string; url: string; body: string | null }[] = [];
const consoleErrors: string[] = [];
/** Statuses a test provokes: Chromium logs each refused fetch as a console error. */
export const refusals = new Set<number>();

// A failed set-up fails every test with its message (a failing beforeAll only skips them).
let setupError: unknown;

/** Registers the shared set-up and checks in the calling describe block. */
export function usePortal(): void {
  beforeAll(async () => {
    try {
      if (!existsSync(CHROMIUM)) {
        throw new Error(`Chromium is not installed at ${CHROMIUM} (apt-get install -y chromium)`);
      }
      api = await startApi();
      receiver = await startReceiver((req, res) => {
        const status = req.url === '/fail' ? 500 : req.url === '/gone' ? 410 : 200;
        res.writeHead(status).end(status === 200 ? 'thanks' : 'no');
      });
      browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    } catch (error) {
      setupError = error;
    }
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await api?.close();
  });

  beforeEach(async () => {
    if (setupError) throw setupError;
    engine = virtualWorker(api.db, { clock: api.clock });
    appId = await createApp(api, { name: 'Acme <b>Corp</b>' });
    for (const name of ['invoice.paid', 'user.created']) {
      await api.request('POST', '/api/v1/event-type', {
        body: { name, description: name, schemas: { 1: { type: 'object', examples: [{ example: name }] } } },
      });
    }
    context = await browser.newContext();
    page = await context.newPage();
    page.on('request', (request) =>
      requested.push({ method: request.method(), url: request.url(), body: request.postData() }),
    );
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(`uncaught: ${error.message}`));
  });

  afterEach(async () => {
    engine?.sender.close();
    await context?.close();
    // Every test ends clean: no console error, nothing asked of another host.
    const provoked = (m: string) => [...refusals].some((n) => m.includes(`responded with a status of ${n} `));
    const errors = consoleErrors.splice(0).filter((m) => !provoked(m));
    const elsewhere = requested.splice(0).filter((r) => !r.url.startsWith(`${api.url}/`));
    refusals.clear();
    expect(errors).toEqual([]);
    expect(elsewhere).toEqual([]);
  });
}

/** Opens the portal with a fresh access link, as a customer handed it would. */
export async function openPortal(body: Record<string, unknown> = {}, app = appId, name = 'Acme <b>Corp</b>') {
  const access = await api.request('POST', `/api/v1/auth/app-portal-access/${app}`, { body });
  expect(access.status, access.text).toBe(200);
  const response = await page.goto(access.body.url);
  // null: the tab was on /portal already, and a new link is a change of its # alone.
  if (response !== null) expect(response.status()).toBe(200);
  // Drawn with this token: it is the tab's, and the page is no longer busy.
  await page.waitForFunction((token: string) => {
    const tab = globalThis as unknown as Tab;
    const drawn = tab.document.getElementById('main')?.getAttribute('aria-busy') === 'false';
    return drawn && (tab.sessionStorage.getItem('courier.portal') ?? '').includes(token);
  }, access.body.token);
  expect(await page.locator('#app-name').textContent()).toBe(name);
  return access.body.token as string;
}
/**
 * The page as an earlier release's API serves it during a rolling upgrade: without the route that
 * says what the token may do (404), so the page offers every action and the API alone refuses.
 */
export async function withoutSessionRoute(): Promise<void> {
  refusals.add(404);
  await page.route('**/api/v1/auth/session', (route) =>
    route.fulfill({
      status: 404,
      contentType: 'application/json',
      body: '{"code":"not_found","detail":"Not Found"}',
    }),
  );
}
/** Holds the tab's requests to `url` (a glob or a predicate) until the returned function is called. */
export async function holdRequests(url: string | ((url: URL) => boolean)): Promise<() => void> {
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  await page.route(url, async (route) => {
    await held;
    await route.continue();
  });
  return release;
}
export const notice = () => page.locator('#notice').textContent();
export const openEndpoint = async (id: string) => {
  await page.locator(`tr[data-endpoint="${id}"] a`).click();
  await page.locator('h2.endpoint-url').waitFor();
};
export const endpoint = async (id: string) =>
  (await api.request('GET', `/api/v1/app/${appId}/endpoint/${id}`)).body;
