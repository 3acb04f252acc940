/**
 * The app portal's messages log, custom headers and rate limit in a real browser: a customer finds
 * a message by event type, reads its payload, where it stands at each endpoint and its attempts,
 * resends it; sets and removes an endpoint's headers (a credential never shown again) and its rate
 * limit. The set-up and the checks after each test are in portal-harness.ts.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { createEndpoint, publishMessage } from '../e2e/support.ts';
import {
  api,
  appId,
  endpoint,
  engine,
  notice,
  openEndpoint,
  openPortal,
  page,
  receiver,
  refusals,
  requested,
  type Tab,
  usePortal,
  withoutSessionRoute,
} from './portal-harness.ts';

describe('app portal in Chromium: messages, headers and rate limit', () => {
  usePortal();

  const messageRows = () => page.locator('tr[data-message]');
  const rowIds = (rows: ReturnType<typeof messageRows>) =>
    rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-message')));

  it('lists the messages newest first, by event type, and opens one with its payload, endpoints and attempts', async () => {
    const ok = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    const failing = await createEndpoint(api, appId, { url: `${receiver.url}/fail` });
    // Its retries would fall due in a later test that moves the shared clock, however this one ends.
    onTestFinished(async () => {
      await api.request('DELETE', `/api/v1/app/${appId}/endpoint/${failing.id}`);
    });
    const payload = { invoice: 'in_1', amount: 500, note: '<b>paid</b>' };
    const paid = await publishMessage(api, appId, { eventType: 'invoice.paid', eventId: 'evt-1', payload });
    api.clock.advance(1_000);
    const created = await publishMessage(api, appId, { eventType: 'user.created' });
    expect(await engine.worker.runOnce()).toBe(4);

    await openPortal();
    await page.click('#nav a:has-text("Messages")');
    await expect.poll(() => rowIds(messageRows())).toEqual([created, paid]);
    expect(await page.locator('#nav a[aria-current=page]').textContent()).toBe('Messages');
    const [time, ...cells] = await page.locator(`tr[data-message="${paid}"] td`).allTextContents();
    expect(time).not.toBe('');
    // Delivered to one endpoint, the other's 500 retried.
    expect(cells).toEqual(['invoice.paid', 'evt-1', paid, '1 delivered, 1 pending']);
    expect(await page.locator(`tr[data-message="${paid}"] td.result`).getAttribute('class')).toBe('result');
    // The list reads no payloads; the message's own view does.
    expect(requested.some((r) => r.url.includes('/msg?with_content=false&with_status=true&limit=50'))).toBe(
      true,
    );

    // One event type: the # keeps it, so a reload shows the same.
    await page.selectOption('select[name=eventType]', 'invoice.paid');
    await page.click('form.filters button[type=submit]');
    await expect.poll(() => rowIds(messageRows())).toEqual([paid]);
    expect(page.url()).toBe(`${api.url}/portal#messages?event_types=invoice.paid`);
    await page.reload();
    await expect.poll(() => rowIds(messageRows())).toEqual([paid]);
    expect(await page.locator('select[name=eventType]').inputValue()).toBe('invoice.paid');

    // By where they stand at one endpoint at least, kept in the # as the API's code.
    await page.selectOption('select[name=eventType]', '');
    await page.selectOption('select[name=status]', 'Failed');
    await page.click('form.filters button[type=submit]');
    await expect
      .poll(() => page.locator('main p.empty').textContent())
      .toBe('No messages match these filters.');
    expect(page.url()).toBe(`${api.url}/portal#messages?status=2`);
    await page.selectOption('select[name=status]', 'Pending');
    await page.click('form.filters button[type=submit]');
    await expect.poll(() => rowIds(messageRows())).toEqual([created, paid]);
    await page.reload();
    await expect.poll(() => rowIds(messageRows())).toEqual([created, paid]);
    expect(await page.locator('select[name=status]').inputValue()).toBe('1');
    await page.selectOption('select[name=eventType]', 'invoice.paid');
    await page.click('form.filters button[type=submit]');
    await expect.poll(() => rowIds(messageRows())).toEqual([paid]);

    await page.click(`tr[data-message="${paid}"] a`);
    await page.locator('h2.message-type').waitFor();
    expect(page.url()).toBe(`${api.url}/portal#message=${paid}`);
    expect(await page.locator('h2.message-type').textContent()).toBe('invoice.paid');
    expect(await page.locator('pre.payload').textContent()).toBe(JSON.stringify(payload, null, 2));
    expect(await page.locator('main b').count()).toBe(0);
    const destination = (id: string) => page.locator(`tr[data-endpoint="${id}"] td`);
    expect((await destination(ok.id).allTextContents()).slice(0, 4)).toEqual([ok.url, 'success', '1', '']);
    const [, status, tries, next] = await destination(failing.id).allTextContents();
    expect([status, tries]).toEqual(['pending', '1']);
    expect(next).not.toBe('');
    const attempts = page.locator('tr[data-attempt] td:nth-child(2)');
    expect((await attempts.allTextContents()).sort()).toEqual([failing.url, ok.url].sort());
    expect(await page.locator('tr[data-attempt] td:nth-child(3)').allTextContents()).toContain('fail (500)');
    // What the receiver answered, folded under each attempt.
    const failed = page.locator('tr[data-attempt]', { hasText: 'fail (500)' });
    await failed.locator('details.response summary').click();
    expect(await failed.locator('details.response p').textContent()).toMatch(/^HTTP 500 in \d+ ms$/);
    expect(await failed.locator('details.response pre').textContent()).toBe('no');

    // Sent again to the endpoint that took it: the same webhook-id, a fresh signature.
    receiver.requests.length = 0;
    await page.click(`tr[data-endpoint="${ok.id}"] button:has-text("Resend")`);
    await expect.poll(notice).toBe('Resend scheduled.');
    expect(await engine.worker.runOnce()).toBe(1);
    expect(
      receiver.requests.map((r) => [r.url, r.headers['webhook-id'], JSON.parse(r.body.toString())]),
    ).toEqual([['/ok', paid, payload]]);
    await page.click('button:has-text("Refresh")');
    await expect.poll(() => page.locator('tr[data-attempt]').count()).toBe(3);
    // Counted since the resend.
    expect(await destination(ok.id).nth(2).textContent()).toBe('1');

    // From the message to the endpoint, and back through the attempt's event.
    await page.click(`tr[data-endpoint="${ok.id}"] a`);
    await page.locator('h2.endpoint-url').waitFor();
    expect(await page.locator('#nav a[aria-current=page]').textContent()).toBe('Endpoints');
    await expect
      .poll(() => page.locator('p.stats').textContent())
      .toBe('Messages of the last 28 days: 2 delivered, 0 pending, 0 sending, 0 failed.');
    // The endpoint's own attempts fold the answer too.
    const answered = page.locator('tr[data-attempt]').first();
    await answered.locator('details.response summary').click();
    expect(await answered.locator('details.response p').textContent()).toMatch(/^HTTP 200 in \d+ ms$/);
    expect(await answered.locator('details.response pre').textContent()).toBe('thanks');
    await page.click(`tr[data-attempt] a[href="#message=${paid}"] >> nth=0`);
    await expect.poll(() => page.locator('h2.message-type').textContent()).toBe('invoice.paid');
    // The failing endpoint's counts: both messages waiting for their next attempt.
    await page.click(`tr[data-endpoint="${failing.id}"] a`);
    await expect
      .poll(() => page.locator('p.stats').textContent())
      .toBe('Messages of the last 28 days: 0 delivered, 2 pending, 0 sending, 0 failed.');
  });

  it('finds a message by its event id or id, and refuses what cannot be one', async () => {
    refusals.add(404);
    const msgId = await publishMessage(api, appId, { eventType: 'user.created', eventId: 'signup-42' });
    await openPortal();
    await page.click('#nav a:has-text("Messages")');
    await messageRows().first().waitFor();
    const find = async (text: string) => {
      await page.fill('input[name=find]', text);
      await page.click('form.find button[type=submit]');
    };
    await find('signup-42');
    await expect.poll(() => page.locator('h2.message-type').textContent()).toBe('user.created');
    expect(await page.locator('table.facts td').first().textContent()).toBe(msgId);
    expect(page.url()).toBe(`${api.url}/portal#message=signup-42`);
    await page.click('#nav a:has-text("Messages")');
    await messageRows().first().waitFor();
    await find(msgId);
    await expect.poll(() => page.url()).toBe(`${api.url}/portal#message=${msgId}`);
    await expect.poll(() => page.locator('h2.message-type').textContent()).toBe('user.created');

    await page.click('#nav a:has-text("Messages")');
    await messageRows().first().waitFor();
    await find('signup 42');
    await expect.poll(notice).toMatch(/^An id or event id is letters, digits/);
    expect(page.url()).toBe(`${api.url}/portal#messages`);
    await find('signup-43');
    await expect.poll(notice).toMatch(/not found/);
    expect(await page.locator('main').textContent()).toBe('← All messages');
  });

  it('filters the messages by channel, tag and time, keeps the filters over a reload, and shows a refused one', async () => {
    refusals.add(422);
    const start = api.clock.now();
    const early = await publishMessage(api, appId, {
      eventType: 'invoice.paid',
      channels: ['eu'],
      tags: ['vip'],
    });
    api.clock.advance(3_600_000);
    const late = await publishMessage(api, appId, {
      eventType: 'invoice.paid',
      channels: ['us'],
      tags: ['vip'],
    });
    const other = await publishMessage(api, appId, { eventType: 'user.created', channels: ['eu'] });
    await openPortal();
    await page.click('#nav a:has-text("Messages")');
    await expect.poll(() => rowIds(messageRows())).toEqual([other, late, early]);
    const show = async (fields: { channel?: string; tag?: string; after?: string; before?: string }) => {
      await page.fill('form.filters input[name=channel]', fields.channel ?? '');
      await page.fill('form.filters input[name=tag]', fields.tag ?? '');
      await page.fill('form.filters input[name=after]', fields.after ?? '');
      await page.fill('form.filters input[name=before]', fields.before ?? '');
      const drawn = await page.$('form.filters');
      await page.click('form.filters button[type=submit]');
      // Until the view is drawn anew, the old form (with what was typed) is still the one on show.
      await page.waitForFunction((form) => !(form as unknown as { isConnected: boolean }).isConnected, drawn);
    };
    await show({ channel: 'eu' });
    await expect.poll(() => rowIds(messageRows())).toEqual([other, early]);
    // The list drawn anew leaves the keyboard on Show; the same filters again read it anew.
    expect(
      await page.evaluate(() => (globalThis as unknown as Tab).document.activeElement?.textContent),
    ).toBe('Show');
    api.clock.advance(3_600_000);
    const newer = await publishMessage(api, appId, { eventType: 'user.created', channels: ['eu'] });
    await show({ channel: 'eu' });
    await expect.poll(() => rowIds(messageRows())).toEqual([newer, other, early]);
    await show({ channel: 'eu', tag: 'vip' });
    await expect.poll(() => rowIds(messageRows())).toEqual([early]);
    expect(page.url()).toBe(`${api.url}/portal#messages?channel=eu&tag=vip`);
    await page.reload();
    await expect.poll(() => rowIds(messageRows())).toEqual([early]);
    expect(await page.locator('form.filters input[name=tag]').inputValue()).toBe('vip');

    // Sent before half an hour after the first: the first alone, the time shown as it was typed.
    // A datetime-local input holds whole minutes.
    const minuteOf = (ms: number) => Math.floor(ms / 60_000) * 60_000;
    const typed = (ms: number) =>
      page.evaluate((at: number) => {
        const d = new Date(at);
        const pad = (n: number) => String(n).padStart(2, '0');
        return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
      }, ms);
    const cutMs = minuteOf(start + 1_800_000);
    const cut = await typed(cutMs);
    await show({ before: cut });
    await expect.poll(() => rowIds(messageRows())).toEqual([early]);
    expect(page.url()).toBe(
      `${api.url}/portal#messages?before=${encodeURIComponent(new Date(cutMs).toISOString())}`,
    );
    expect(await page.locator('form.filters input[name=before]').inputValue()).toBe(cut);
    // Sent after it: all but the first; between it and an hour later: the two of the second hour.
    await show({ after: cut });
    await expect.poll(() => rowIds(messageRows())).toEqual([newer, other, late]);
    const endMs = minuteOf(start + 5_400_000);
    await show({ after: cut, before: await typed(endMs) });
    await expect.poll(() => rowIds(messageRows())).toEqual([other, late]);
    const iso = (ms: number) => encodeURIComponent(new Date(ms).toISOString());
    expect(page.url()).toBe(`${api.url}/portal#messages?after=${iso(cutMs)}&before=${iso(endMs)}`);
    expect(await page.locator('form.filters input[name=after]').inputValue()).toBe(cut);

    // What the API refuses is shown with its reason, beside the form as it was sent, to correct
    // it, and the way back to every message.
    await show({ channel: 'not a channel', tag: 'vip' });
    await expect.poll(notice).toMatch(/^channel: /);
    expect(await messageRows().count()).toBe(0);
    expect(await page.locator('main p.refused').textContent()).toBe('← All messages');
    expect(await page.locator('form.filters input[name=channel]').inputValue()).toBe('not a channel');
    expect(await page.locator('form.filters input[name=tag]').inputValue()).toBe('vip');
    await show({ channel: 'eu', tag: 'vip' });
    await expect.poll(() => rowIds(messageRows())).toEqual([early]);
    expect(await notice()).toBe('');
    await show({ channel: 'not a channel' });
    await expect.poll(notice).toMatch(/^channel: /);
    // Left by the menu, or by the way back: the refusal goes with the view.
    await page.click('#nav a:has-text("Endpoints")');
    await expect.poll(notice).toBe('');
    await page.goBack();
    await expect.poll(notice).toMatch(/^channel: /);
    await page.click('main p.refused a');
    await expect.poll(() => rowIds(messageRows())).toEqual([newer, other, late, early]);
    expect(await notice()).toBe('');
  });

  it('shows a message whose payload was deleted, and offers no resend', async () => {
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    const msgId = await publishMessage(api, appId, { eventType: 'invoice.paid' });
    expect(await engine.worker.runOnce()).toBe(1);
    const expunged = await api.request('DELETE', `/api/v1/app/${appId}/msg/${msgId}/content`);
    expect(expunged.status).toBe(204);
    await openPortal();
    // In the log: delivered to its one endpoint, in green.
    await page.click('#nav a:has-text("Messages")');
    const status = page.locator(`tr[data-message="${msgId}"] td.result`);
    await expect.poll(() => status.textContent()).toBe('1 delivered');
    expect(await status.getAttribute('class')).toBe('result success');
    await page.goto(`${api.url}/portal#message=${msgId}`);
    await expect
      .poll(() => page.locator('p.payload').textContent())
      .toMatch(
        /^Deleted .+ \(on request, or at the end of the retention it was published with\): it can no longer be sent again\.$/,
      );
    expect(await page.locator('pre.payload').count()).toBe(0);
    expect(await page.locator(`tr[data-endpoint="${ep.id}"] td`).nth(1).textContent()).toBe('success');
    expect(await page.locator('button:has-text("Resend")').count()).toBe(0);
    // Nor on the endpoint's attempt of it.
    await page.click(`tr[data-endpoint="${ep.id}"] a`);
    await page.locator('h2.endpoint-url').waitFor();
    expect(await page.locator(`tr[data-attempt] a[href="#message=${msgId}"]`).count()).toBe(1);
    expect(await page.locator('button:has-text("Resend")').count()).toBe(0);
  });

  it('says until when a payload published with a retention of its own is kept', async () => {
    const expiresAt = new Date(api.clock.now() + 2 * 3_600_000).toISOString();
    const kept = await publishMessage(api, appId, { payloadRetentionHours: 2 });
    const forever = await publishMessage(api, appId);
    await openPortal();
    const facts = async (msgId: string) => {
      await page.goto(`${api.url}/portal#message=${msgId}`);
      await expect.poll(() => page.locator('table.facts td').first().textContent()).toBe(msgId);
      return page
        .locator('table.facts tr')
        .evaluateAll((trs) =>
          trs.map((tr) => [tr.querySelector('th')!.textContent, tr.querySelector('td')!.textContent]),
        );
    };
    expect(await facts(kept)).toContainEqual([
      'Payload kept until',
      await page.evaluate((iso: string) => new Date(iso).toLocaleString(), expiresAt),
    ]);
    expect((await facts(forever)).map(([label]) => label)).not.toContain('Payload kept until');
    // Once it has gone, it says when instead.
    api.clock.advance(2 * 3_600_000);
    expect((await facts(kept)).map(([label]) => label)).not.toContain('Payload kept until');
    expect(await page.locator('p.payload').textContent()).toMatch(/^Deleted /);
  });

  it('says when there are no messages, and when one is not found leads back to the list', async () => {
    refusals.add(404);
    await openPortal();
    await page.click('#nav a:has-text("Messages")');
    await expect.poll(() => page.locator('main p.empty').textContent()).toBe('No messages yet.');
    await page.selectOption('select[name=eventType]', 'user.created');
    await page.click('form.filters button[type=submit]');
    await expect
      .poll(() => page.locator('main p.empty').textContent())
      .toBe('No messages match these filters.');

    await page.goto(`${api.url}/portal#message=msg_2ZZZZZZZZZZZZZZZZZZZZZZZZZ`);
    await expect.poll(notice).toMatch(/not found/);
    expect(await page.locator('main').textContent()).toBe('← All messages');
    await page.click('main a');
    await expect.poll(() => page.locator('main p.empty').textContent()).toBe('No messages yet.');

    // '..' would be resolved away (to the application's own path): the page does not call with it.
    requested.length = 0;
    await page.goto(`${api.url}/portal#message=..`);
    await page.locator('h2:has-text("Endpoints")').waitFor();
    expect(requested.filter((r) => r.url.includes('/msg/') || r.url.endsWith(`/app/${appId}/`))).toEqual([]);
  });

  it("sets and removes an endpoint's custom headers; a credential's value is never shown again", async () => {
    refusals.add(422);
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    await openPortal();
    await openEndpoint(ep.id);
    await page.click('details.headers summary');
    await expect.poll(() => page.locator('details.headers p.empty').textContent()).toBe('No custom headers.');

    const setHeader = async (name: string, value: string) => {
      await page.fill('input[name=headerName]', name);
      await page.fill('input[name=headerValue]', value);
      await page.click('details.headers button[type=submit]');
    };
    await setHeader('X-Tenant', 'acme');
    await expect.poll(notice).toBe('Header saved.');
    await setHeader('Authorization', 'Bearer s3cret');
    await expect.poll(() => page.locator('tr[data-header]').count()).toBe(2);
    expect(await page.locator('tr[data-header="X-Tenant"] td').nth(1).textContent()).toBe('acme');
    expect(await page.locator('tr[data-header="Authorization"] td').nth(1).textContent()).toBe(
      'hidden: a credential is never shown again',
    );
    expect(await page.locator('body').textContent()).not.toContain('s3cret');

    // A name Courier sets itself is refused, with the API's reason; nothing changes.
    await setHeader('webhook-id', 'forged');
    await expect.poll(notice).toMatch(/^headers/);
    const stored = await api.request('GET', `/api/v1/app/${appId}/endpoint/${ep.id}/headers`);
    expect(stored.body).toEqual({ headers: { 'X-Tenant': 'acme' }, sensitive: ['Authorization'] });

    // The receiver gets both; a removed one is gone, the credential kept as it was.
    await publishMessage(api, appId, { eventType: 'invoice.paid' });
    expect(await engine.worker.runOnce()).toBe(1);
    expect(receiver.requests.at(-1)?.headers).toMatchObject({
      'x-tenant': 'acme',
      authorization: 'Bearer s3cret',
    });
    await page.click('tr[data-header="X-Tenant"] button');
    await expect.poll(notice).toBe('Header removed.');
    await expect.poll(() => page.locator('tr[data-header]').count()).toBe(1);
    await publishMessage(api, appId, { eventType: 'invoice.paid' });
    expect(await engine.worker.runOnce()).toBe(1);
    expect(receiver.requests.at(-1)?.headers['x-tenant']).toBeUndefined();
    expect(receiver.requests.at(-1)?.headers.authorization).toBe('Bearer s3cret');
  });

  it("shows a read-only token's refusal to read the headers, and changes nothing", async () => {
    refusals.add(403);
    const ep = await createEndpoint(api, appId, {
      url: `${receiver.url}/ok`,
      headers: { 'X-Tenant': 'acme' },
    });
    // Offered the editor only by an earlier release's API, which does not say what a token may do.
    await withoutSessionRoute();
    await openPortal({ readOnly: true });
    await openEndpoint(ep.id);
    await page.click('details.headers summary');
    await expect.poll(notice).toBe('This token lacks the capability this route needs: ManageEndpoint');
    expect(await page.locator('details.headers').textContent()).toBe('Custom headers');
  });

  it('sets the rate limit and channels on add and edit, refuses what the API refuses, and clears them', async () => {
    refusals.add(422);
    const byDefault = api.config.rateLimit;
    await openPortal();
    // Never sent to: the test delivers nothing to it.
    await page.fill('input[name=url]', 'https://hooks.example.com/in');
    await page.fill('input[name=rateLimit]', '5');
    await page.fill('input[name=channels]', ' eu, project_1 ,');
    await page.click('form.endpoint-form button[type=submit]');
    await page.locator('h2.endpoint-url').waitFor();
    const id = new URL(page.url()).hash.slice('#endpoint='.length);
    expect(await endpoint(id)).toMatchObject({ rateLimit: 5, channels: ['eu', 'project_1'] });

    await page.click('details.edit summary');
    expect(await page.locator('details.edit input[name=rateLimit]').inputValue()).toBe('5');
    expect(await page.locator('details.edit input[name=channels]').inputValue()).toBe('eu, project_1');
    await page.fill('details.edit input[name=channels]', 'eu, not a channel');
    await page.click('details.edit button[type=submit]');
    await expect.poll(notice).toMatch(/^channels\.1: /);
    await page.fill('details.edit input[name=channels]', 'eu');
    await page.fill('details.edit input[name=rateLimit]', String(byDefault + 1));
    await page.click('details.edit button[type=submit]');
    await expect
      .poll(notice)
      .toMatch(new RegExp(`^rateLimit: an application's token sets rateLimit up to ${byDefault} `));
    expect((await endpoint(id)).rateLimit).toBe(5);

    await page.fill('details.edit input[name=rateLimit]', '');
    await page.click('details.edit button[type=submit]');
    await expect.poll(notice).toBe('Endpoint saved.');
    expect(await endpoint(id)).toMatchObject({ rateLimit: byDefault, channels: ['eu'] });
    await page.click('details.edit summary');
    expect(await page.locator('details.edit input[name=rateLimit]').inputValue()).toBe(String(byDefault));
    await page.fill('details.edit input[name=channels]', ' ');
    await page.click('details.edit button[type=submit]');
    await expect.poll(notice).toBe('Endpoint saved.');
    expect((await endpoint(id)).channels).toBeNull();
  });

  it('says how far the operator lets the token raise the rate limit for the URL, and shows the refusal', async () => {
    refusals.add(422);
    const ep = await createEndpoint(api, appId, { url: 'https://hooks.example.com/slow', rateLimit: 5 });
    await openPortal();
    await openEndpoint(ep.id);
    await page.click('details.edit summary');
    expect(await page.locator('details.edit .bound').textContent()).toBe(
      '; at most 5 for this URL, as the service that sends these webhooks set it',
    );
    await page.fill('details.edit input[name=rateLimit]', '');
    await page.click('details.edit button[type=submit]');
    await expect
      .poll(notice)
      .toMatch(/^rateLimit: an application's token sets rateLimit up to 5 \(the operator's, for this URL\)/);
    await page.fill('details.edit input[name=rateLimit]', '2');
    await page.click('details.edit button[type=submit]');
    await expect.poll(notice).toBe('Endpoint saved.');
    expect((await endpoint(ep.id)).rateLimit).toBe(2);
    // Lowered by the token, the bound stays the operator's.
    await page.click('details.edit summary');
    expect(await page.locator('details.edit .bound').textContent()).toContain('at most 5 for this URL');
  });
});
