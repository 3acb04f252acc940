/**
 * The app portal's attempts of an endpoint by result in a real browser: all when the view is
 * drawn, succeeded or failed when chosen, a slower read for an earlier choice never drawn over a
 * later one. The set-up and the checks after each test are in portal-harness.ts.
 */
import { describe, expect, it } from 'vitest';
import { createEndpoint, publishMessage } from '../e2e/support.ts';
import {
  api,
  appId,
  engine,
  holdRequests,
  openEndpoint,
  openPortal,
  page,
  receiver,
  refusals,
  usePortal,
} from './portal-harness.ts';

describe('app portal in Chromium: attempts by result', () => {
  usePortal();

  const messagesShown = () =>
    page
      .locator('tr[data-attempt] td:nth-child(2) a')
      .evaluateAll((links) => links.map((a) => a.getAttribute('href')));

  /** Clicks the button and waits for the view to be drawn anew (until then the old one, its choice made, is on show). */
  const redrawnBy = async (label: string) => {
    const drawn = await page.$('select[name=attemptResult]');
    await page.click(`button:has-text("${label}")`);
    await page.waitForFunction(
      (select) => !(select as unknown as { isConnected: boolean }).isConnected,
      drawn,
    );
  };

  /** An endpoint with one failed attempt, then (its URL moved to a receiver that answers 200) one delivered. */
  async function endpointWithBoth() {
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/fail` });
    const failed = await publishMessage(api, appId, { eventType: 'invoice.paid' });
    expect(await engine.worker.runOnce()).toBe(1);
    await api.request('PATCH', `/api/v1/app/${appId}/endpoint/${ep.id}`, {
      body: { url: `${receiver.url}/ok` },
    });
    const delivered = await publishMessage(api, appId, { eventType: 'user.created' });
    expect(await engine.worker.runOnce()).toBe(1);
    return { ep, failed: `#message=${failed}`, delivered: `#message=${delivered}` };
  }

  it('shows all, then those that failed or succeeded; the choice stays through a reload and a way back', async () => {
    const { ep, failed, delivered } = await endpointWithBoth();
    const other = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    await openPortal();
    await openEndpoint(ep.id);
    await expect.poll(messagesShown).toEqual([delivered, failed]);
    await page.selectOption('select[name=attemptResult]', '2');
    await expect.poll(messagesShown).toEqual([failed]);
    await page.selectOption('select[name=attemptResult]', '0');
    await expect.poll(messagesShown).toEqual([delivered]);
    await redrawnBy('Refresh');
    expect(await page.locator('select[name=attemptResult]').inputValue()).toBe('0');
    await expect.poll(messagesShown).toEqual([delivered]);

    // Another endpoint has a choice of its own; back on the first, its choice is still made.
    await page.click('a:has-text("← All endpoints")');
    await openEndpoint(other.id);
    expect(await page.locator('main p.empty').first().textContent()).toBe('No attempts yet.');
    expect(await page.locator('select[name=attemptResult]').inputValue()).toBe('');
    await page.click('a:has-text("← All endpoints")');
    await openEndpoint(ep.id);
    expect(await page.locator('select[name=attemptResult]').inputValue()).toBe('0');
    await expect.poll(messagesShown).toEqual([delivered]);
    await page.selectOption('select[name=attemptResult]', '');
    await expect.poll(messagesShown).toEqual([delivered, failed]);

    await page.click('a:has-text("← All endpoints")');
    await openEndpoint(other.id);
    await page.selectOption('select[name=attemptResult]', '2');
    await expect
      .poll(() => page.locator('main p.empty').first().textContent())
      .toBe('No attempts with this result.');
  });

  it("keeps the failed ones on show through an action's reload, and the action's notice", async () => {
    const { ep, failed } = await endpointWithBoth();
    await openPortal();
    await openEndpoint(ep.id);
    await page.selectOption('select[name=attemptResult]', '2');
    await expect.poll(messagesShown).toEqual([failed]);
    await redrawnBy('Pause');
    expect(await page.locator('select[name=attemptResult]').inputValue()).toBe('2');
    await expect.poll(messagesShown).toEqual([failed]);
    await page.waitForTimeout(200);
    expect(await page.locator('#notice').textContent()).toBe('Endpoint paused.');

    // The chosen read failing: said where the attempts go, the action's notice kept.
    refusals.add(500);
    await page.route('**/attempt/endpoint/**status=2*', (route) =>
      route.fulfill({
        status: 500,
        contentType: 'application/json',
        body: '{"code":"internal_error","detail":"Internal server error"}',
      }),
    );
    await page.click('button:has-text("Resume")');
    await expect
      .poll(() => page.locator('main p.empty').first().textContent())
      .toBe('The attempts could not be read: Internal server error');
    expect(await page.locator('#notice').textContent()).toBe('Endpoint resumed.');
  });

  it("forgets the choices with the link: another link's view shows all", async () => {
    const { ep, failed, delivered } = await endpointWithBoth();
    await openPortal();
    await openEndpoint(ep.id);
    await page.selectOption('select[name=attemptResult]', '2');
    await expect.poll(messagesShown).toEqual([failed]);
    await openPortal();
    await openEndpoint(ep.id);
    expect(await page.locator('select[name=attemptResult]').inputValue()).toBe('');
    await expect.poll(messagesShown).toEqual([delivered, failed]);
  });

  it('never draws a slower read for an earlier choice over a later one', async () => {
    const { ep, failed, delivered } = await endpointWithBoth();
    await openPortal();
    await openEndpoint(ep.id);
    await expect.poll(messagesShown).toEqual([delivered, failed]);
    // The failed ones' read answers after the succeeded ones'.
    const release = await holdRequests('**/attempt/endpoint/**status=2*');
    await page.selectOption('select[name=attemptResult]', '2');
    await page.selectOption('select[name=attemptResult]', '0');
    await expect.poll(messagesShown).toEqual([delivered]);
    const slow = page.waitForResponse((r) => r.url().includes('status=2'));
    release();
    await (await slow).finished();
    // Past the tasks that handle it: still the succeeded ones.
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 200)));
    expect(await messagesShown()).toEqual([delivered]);
    expect(await page.locator('select[name=attemptResult]').inputValue()).toBe('0');
  });
});
