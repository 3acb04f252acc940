/**
 * The app portal at /portal in a real browser, opened with the link POST /auth/app-portal-access
 * answers: a customer adds, edits, pauses, resumes and deletes endpoints, reads the secret, sees
 * attempts and dead letters, resends and replays, all through the API with the application's
 * token, whose refusals the page shows. The messages log and custom headers are in
 * app-portal-messages.test.ts; the set-up and the checks after each test in portal-harness.ts.
 */
import { describe, expect, it } from 'vitest';
import { holdEndpoint } from '../../src/store/queries/endpoint-status.ts';
import { createApp, createEndpoint, publishMessage } from '../e2e/support.ts';
import {
  api,
  appId,
  endpoint,
  engine,
  holdRequests,
  notice,
  openEndpoint,
  openPortal,
  page,
  receiver,
  refusals,
  requested,
  usePortal,
  withoutSessionRoute,
} from './portal-harness.ts';

describe('app portal in Chromium', () => {
  usePortal();

  /** A link opened, then ended by the operator: the page's next call answers 401. */
  const openEndedLink = async () => {
    refusals.add(401);
    await openPortal();
    expect((await api.request('POST', `/api/v1/auth/app/${appId}/expire-all`, { body: {} })).status).toBe(
      204,
    );
  };

  it('opens from the access link, keeps the token out of the address bar and lists the endpoints', async () => {
    const admin = await createEndpoint(api, appId, { url: `${receiver.url}/ok`, description: 'orders' });
    const access = await api.request('POST', `/api/v1/auth/app-portal-access/${appId}`, { body: {} });
    expect(access.body.url).toBe(
      `${api.url}/portal#app=${appId}&key=${encodeURIComponent(access.body.token)}`,
    );
    await page.goto(access.body.url);
    await page.locator(`tr[data-endpoint="${admin.id}"]`).waitFor();
    expect(page.url()).toBe(`${api.url}/portal`);
    expect(await page.title()).toBe('Acme <b>Corp</b> webhooks');
    const row = page.locator(`tr[data-endpoint="${admin.id}"] td`);
    expect(await row.allTextContents()).toEqual([`${receiver.url}/ok`, 'orders', 'enabled', 'all']);
    // A reload in the same tab keeps the session; the endpoint view has its own address.
    await openEndpoint(admin.id);
    expect(page.url()).toBe(`${api.url}/portal#endpoint=${admin.id}`);
    await page.reload();
    expect(await page.locator('h2.endpoint-url').textContent()).toBe(`${receiver.url}/ok`);
    expect(await page.locator('p.description').textContent()).toBe('orders');
    await page.goBack();
    await page.locator(`tr[data-endpoint="${admin.id}"]`).waitFor();
  });

  it('adds an endpoint through the form, with the event types ticked, and edits it', async () => {
    await openPortal();
    await page.fill('input[name=url]', 'https://hooks.example.com/in');
    await page.fill('input[name=description]', 'billing');
    await page.check('input[name=eventType][value="invoice.paid"]');
    await page.click('form button[type=submit]');
    await page.locator('h2.endpoint-url').waitFor();
    expect(await notice()).toBe('Endpoint added.');
    const list = (await api.request('GET', `/api/v1/app/${appId}/endpoint`)).body.data;
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({
      url: 'https://hooks.example.com/in',
      description: 'billing',
      filterTypes: ['invoice.paid'],
      publicOnly: true, // made with the application's token
    });

    await page.click('details.edit summary');
    await page.fill('details.edit input[name=description]', 'billing and users');
    await page.uncheck('details.edit input[name=eventType][value="invoice.paid"]');
    await page.check('details.edit input[name=eventType][value="user.created"]');
    await page.click('details.edit button[type=submit]');
    await expect.poll(notice).toBe('Endpoint saved.');
    expect(await endpoint(list[0].id)).toMatchObject({
      description: 'billing and users',
      filterTypes: ['user.created'],
    });
    // No type ticked: every event.
    await page.click('details.edit summary');
    await page.uncheck('details.edit input[name=eventType][value="user.created"]');
    await page.click('details.edit button[type=submit]');
    await expect.poll(notice).toBe('Endpoint saved.');
    expect((await endpoint(list[0].id)).filterTypes).toBeNull();
  });

  it('shows attempts and resends a failed message with the same id', async () => {
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/fail` });
    const msgId = await publishMessage(api, appId, {
      eventType: 'invoice.paid',
      payload: { secret: 'x'.repeat(5000) },
    });
    expect(await engine.worker.runOnce()).toBe(1);
    await openPortal();
    // The table needs each message's event type, not its payload (up to a MiB each).
    const attemptsRead = page.waitForResponse((r) => r.url().includes(`/attempt/endpoint/${ep.id}`));
    await openEndpoint(ep.id);
    const [read] = (await (await attemptsRead).json()).data;
    expect(read.msg.eventType).toBe('invoice.paid');
    expect(JSON.stringify(read)).not.toContain('xxxx');
    // No description: no line for it.
    expect(await page.locator('main').textContent()).not.toContain('null');
    expect(await page.locator('p.description').count()).toBe(0);
    const rows = page.locator('tr[data-attempt]');
    expect(await rows.count()).toBe(1);
    expect(await rows.first().locator('td').nth(1).textContent()).toBe('invoice.paid');
    expect(await rows.first().locator('td.result').textContent()).toBe('fail (500)');

    const before = receiver.requests.length;
    await rows.first().locator('button', { hasText: 'Resend' }).click();
    await expect.poll(notice).toBe('Resend scheduled.');
    expect(await engine.worker.runOnce()).toBe(1);
    expect(receiver.requests.length).toBe(before + 1);
    expect(receiver.requests.at(-1)?.headers['webhook-id']).toBe(
      receiver.requests.at(-2)?.headers['webhook-id'],
    );
    expect(receiver.requests.at(-1)?.headers['webhook-id']).toBe(msgId);
    await page.click('button:has-text("Refresh")');
    await expect.poll(() => rows.count()).toBe(2);
  });

  it('lists dead letters, replays one, then all; a deleted payload is shown, not offered', async () => {
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/gone` });
    const msgIds = [];
    for (let i = 0; i < 4; i++) msgIds.push(await publishMessage(api, appId));
    expect(await engine.worker.runOnce()).toBe(4);
    const expunged = await api.request('DELETE', `/api/v1/app/${appId}/msg/${msgIds[3]}/content`);
    expect(expunged.status, expunged.text).toBe(204);
    await openPortal();
    // In the log, in red: failed for good at this endpoint.
    await page.click('#nav a:has-text("Messages")');
    const status = page.locator(`tr[data-message="${msgIds[0]}"] td.result`);
    await expect.poll(() => status.textContent()).toMatch(/\b1 failed$/);
    expect(await status.getAttribute('class')).toBe('result fail');
    await page.click('#nav a:has-text("Endpoints")');
    await openEndpoint(ep.id);
    const dead = page.locator('tr[data-dead-letter]');
    expect(await dead.locator('td:first-child').allTextContents()).toEqual(msgIds);
    expect(await dead.nth(3).locator('td').last().textContent()).toBe(
      'payload deleted: cannot be sent again',
    );
    expect(await dead.nth(3).locator('button').count()).toBe(0);

    await dead.first().locator('button', { hasText: 'Replay' }).click();
    await expect.poll(notice).toBe('1 scheduled again.');
    await expect.poll(() => dead.count()).toBe(3);
    const before = receiver.requests.length;
    expect(await engine.worker.runOnce()).toBe(1);
    expect(receiver.requests.length).toBe(before + 1);
    expect(receiver.requests.at(-1)?.headers['webhook-id']).toBe(msgIds[0]);

    // Gone again (410): four dead letters, the one without a payload left out of "Replay all".
    await page.click('button:has-text("Refresh")');
    await expect.poll(() => dead.count()).toBe(4);
    await page.click('button:has-text("Replay all")');
    await expect.poll(notice).toBe('3 scheduled again.');
    await expect.poll(() => dead.count()).toBe(1);
    await page.click('button:has-text("Replay all")');
    await expect.poll(notice).toBe('Nothing to replay: no dead letter with a payload left.');
    expect(await engine.worker.runOnce()).toBe(3);
  });

  it('loads more than a page of endpoints and attempts', async () => {
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/ok`, uid: 'first' });
    // Never sent to (their type is not published here): no request leaves the loopback.
    for (let i = 0; i < 50; i++) {
      await createEndpoint(api, appId, { url: `https://h${i}.example.com/`, filterTypes: ['invoice.paid'] });
    }
    for (let i = 0; i < 51; i++) await publishMessage(api, appId, { eventType: 'user.created' });
    await openPortal();
    const endpoints = page.locator('tr[data-endpoint]');
    expect(await endpoints.count()).toBe(50);
    await page.click('button.more');
    await expect.poll(() => endpoints.count()).toBe(51);
    expect(await page.locator('button.more').isHidden()).toBe(true);
    expect(
      new Set(await endpoints.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-endpoint')))).size,
    ).toBe(51);

    // The receiver's 51 attempts, past the first page.
    let sent = 0;
    for (let n = await engine.worker.runOnce(); n > 0; n = await engine.worker.runOnce()) sent += n;
    expect(sent).toBe(51);
    await openEndpoint(ep.id);
    const attempts = page.locator('tr[data-attempt]');
    expect(await attempts.count()).toBe(50);
    await page.click('.paged button.more >> visible=true');
    await expect.poll(() => attempts.count()).toBe(51);
  });

  it('pauses, resumes, shows the signing secret, sends examples and deletes', async () => {
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    await openPortal();
    await openEndpoint(ep.id);
    await page.click('button:has-text("Pause")');
    await expect.poll(notice).toBe('Endpoint paused.');
    expect((await endpoint(ep.id)).status).toBe('paused');
    expect(await page.locator('p.status').textContent()).toMatch(/^paused/);
    await page.click('button:has-text("Resume")');
    await expect.poll(notice).toBe('Endpoint resumed.');
    expect((await endpoint(ep.id)).status).toBe('enabled');
    // Disabled by Courier (its every attempt failing for days): the page offers to resume it.
    await api.db.transaction((tx) =>
      holdEndpoint(tx, ep.id, 'disabled', 'disabled after failing for 5 days', api.clock.now()),
    );
    await page.reload();
    await expect.poll(() => page.locator('p.status').textContent()).toMatch(/^disabled/);
    await page.click('button:has-text("Resume")');
    await expect.poll(notice).toBe('Endpoint resumed.');
    expect((await endpoint(ep.id)).status).toBe('enabled');
    // Disabled by the operator: theirs to resume, which the page says instead of offering it.
    await api.request('PATCH', `/api/v1/app/${appId}/endpoint/${ep.id}`, { body: { disabled: true } });
    await page.reload();
    await expect
      .poll(() => page.locator('p.held').textContent())
      .toBe('Held by the service that sends these webhooks: ask them to resume it.');
    expect(
      await page.locator('.actions button:has-text("Resume"), .actions button:has-text("Pause")').count(),
    ).toBe(0);
    await api.request('POST', `/api/v1/app/${appId}/endpoint/${ep.id}/resume`);
    await page.reload();
    await page.locator('button:has-text("Pause")').waitFor();
    expect(await page.locator('p.held').count()).toBe(0);

    await page.click('button:has-text("Show signing secret")');
    const secret = (await api.request('GET', `/api/v1/app/${appId}/endpoint/${ep.id}/secret`)).body.key;
    await expect.poll(() => page.locator('code.secret').textContent()).toBe(secret);

    expect(await page.locator('select[name=example] option').allTextContents()).toEqual([
      'svix.ping',
      'invoice.paid',
      'user.created',
    ]);
    await page.selectOption('select[name=example]', 'user.created');
    await page.click('button:text-is("Send")');
    await expect.poll(notice).toBe('Example sent.');
    await page.selectOption('select[name=example]', 'svix.ping');
    await page.click('button:text-is("Send")');
    await expect.poll(notice).toBe('Example sent.');
    expect(await engine.worker.runOnce()).toBe(2);
    expect(receiver.requests.slice(-2).map((r) => JSON.parse(r.body.toString()))).toEqual(
      expect.arrayContaining([{ example: 'user.created' }, { success: true }]),
    );

    page.once('dialog', (dialog) => dialog.dismiss());
    await page.click('button:has-text("Delete")');
    // A round trip after the dismissal: a DELETE it had sent would have gone out before it.
    const secretRead = page.waitForResponse((r) => r.url().endsWith(`/endpoint/${ep.id}/secret`));
    await page.click('button:has-text("Show signing secret")');
    await secretRead;
    expect(requested.filter((r) => r.method === 'DELETE')).toEqual([]);
    expect((await endpoint(ep.id)).id).toBe(ep.id);
    page.once('dialog', (dialog) => dialog.accept());
    await page.click('button:has-text("Delete")');
    await expect.poll(notice).toBe('Endpoint deleted.');
    await page.locator('text=No endpoints yet').waitFor();
    expect((await api.request('GET', `/api/v1/app/${appId}/endpoint/${ep.id}`)).status).toBe(404);

    // Back to the deleted endpoint's address: its 404, and nothing of it drawn.
    refusals.add(404);
    await page.goBack();
    await expect.poll(notice).toBe(`Endpoint ${ep.id} not found`);
    expect(await page.locator('main').textContent()).toBe('← All endpoints');
  });

  it('keeps, on edit, event types the catalogue does not list', async () => {
    const ep = await createEndpoint(api, appId, {
      url: `${receiver.url}/ok`,
      filterTypes: ['order.created', 'invoice.paid'],
    });
    await openPortal();
    await openEndpoint(ep.id);
    await page.click('details.edit summary');
    const unlisted = page.locator('details.edit label', { hasText: 'order.created' });
    expect(await unlisted.textContent()).toBe(' order.created (not in the catalogue)');
    expect(await unlisted.locator('input').isChecked()).toBe(true);
    await page.fill('details.edit input[name=description]', 'orders');
    const patch = page.waitForRequest((r) => r.method() === 'PATCH');
    await page.click('details.edit button[type=submit]');
    // The URL, rate limit and channels as they were are not sent: the URL is checked again only
    // when it changes, and settings sent back as read would undo a change made meanwhile.
    expect((await patch).postDataJSON()).toEqual({
      description: 'orders',
      filterTypes: ['invoice.paid', 'order.created'],
    });
    await expect.poll(notice).toBe('Endpoint saved.');
    expect(await endpoint(ep.id)).toMatchObject({
      description: 'orders',
      filterTypes: ['invoice.paid', 'order.created'],
    });
  });

  it("shows the API's refusals and changes nothing", async () => {
    for (const status of [401, 403, 422]) refusals.add(status);
    // A read-only token is offered no form (app-portal-capabilities.test.ts); from an earlier
    // release's API, which does not say what the token may do, it is, and the API refuses.
    await withoutSessionRoute();
    await openPortal({ readOnly: true });
    // Nor does it say when the link ends.
    expect(await page.locator('#expires').textContent()).toBe('');
    await page.fill('input[name=url]', 'https://hooks.example.com/in');
    await page.click('form button[type=submit]');
    await expect.poll(notice).toBe('This token lacks the capability this route needs: ManageEndpoint');
    expect(await page.locator('#notice').getAttribute('role')).toBe('alert');
    expect((await api.request('GET', `/api/v1/app/${appId}/endpoint`)).body.data).toEqual([]);

    // A newer link in the same tab (its # alone changes) brings its own token: a full one, whose
    // address the API refuses shows the field and the reason.
    await openPortal();
    await page.fill('input[name=url]', 'ftp://hooks.example.com/in');
    await page.click('form button[type=submit]');
    await expect.poll(notice).toMatch(/^url: /);
    expect((await api.request('GET', `/api/v1/app/${appId}/endpoint`)).body.data).toEqual([]);

    // An ended token: the page says so, and shows nothing of the application.
    await api.request('POST', `/api/v1/auth/app/${appId}/expire-all`, { body: {} });
    await page.reload();
    await expect.poll(notice).toBe('This link has expired or was revoked: ask for a new one.');
    expect(await page.locator('main').textContent()).toBe('');
  });

  it("opens another application's link in the same tab with nothing of the first left", async () => {
    const mine = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    const other = await createApp(api, { name: 'Globex' });
    const theirs = await createEndpoint(api, other, { url: `${receiver.url}/ok`, description: 'globex' });
    const flagged = await api.request('POST', '/api/v1/event-type', {
      body: { name: 'beta.feature', description: 'beta', featureFlags: ['beta'] },
    });
    expect(flagged.status, flagged.text).toBe(201);
    const examples = () => page.locator('select[name=example] option').allTextContents();
    await openPortal({ featureFlags: ['beta'] });
    await openEndpoint(mine.id);
    expect(await examples()).toContain('beta.feature');
    await openPortal({}, other, 'Globex');
    expect(await page.title()).toBe('Globex webhooks');
    expect(
      await page
        .locator('tr[data-endpoint]')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-endpoint'))),
    ).toEqual([theirs.id]);
    // The event types are the new token's: without the flag, the flagged one is not offered.
    const offered = page.locator('input[name=eventType]');
    expect(await offered.evaluateAll((boxes) => boxes.map((b) => b.getAttribute('value')))).toEqual([
      'invoice.paid',
      'user.created',
    ]);
  });

  it("opens a new tab with an open tab's session, and lets it go when it is signed out there", async () => {
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    await openPortal();
    const second = await page.context().newPage();
    try {
      // A view's address opened in a new tab (a middle click): the open tab lends its session.
      await second.goto(`${api.url}/portal#endpoint=${ep.id}`);
      await expect.poll(() => second.locator('h2.endpoint-url').textContent()).toBe(`${receiver.url}/ok`);
      expect(await second.locator('#app-name').textContent()).toBe('Acme <b>Corp</b>');
      // Signed out in the first tab, the token has ended: the second lets it go, and says why.
      await page.click('#sign-out');
      await expect
        .poll(() => second.locator('main').textContent())
        .toBe('This page opens with the link your provider gives you; it holds your access.');
      expect(await second.locator('#notice').textContent()).toBe(
        'Signed out in another tab: this link no longer opens the page.',
      );
      expect(await second.locator('#nav').isHidden()).toBe(true);
    } finally {
      await second.close();
    }
  });

  it('lets a signed-out token go in every tab: none hands it back to another', async () => {
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    await openPortal();
    const others = [await page.context().newPage(), await page.context().newPage()];
    const askLink = 'This page opens with the link your provider gives you; it holds your access.';
    try {
      for (const tab of others) {
        await tab.goto(`${api.url}/portal#endpoint=${ep.id}`);
        await expect.poll(() => tab.locator('h2.endpoint-url').textContent()).toBe(`${receiver.url}/ok`);
      }
      await page.click('#sign-out');
      for (const tab of others) await expect.poll(() => tab.locator('main').textContent()).toBe(askLink);
      // Past any ask the two could make of each other, and after a reload: still without it.
      await others[0]!.waitForTimeout(600);
      await others[1]!.reload();
      await others[1]!.waitForTimeout(600);
      for (const tab of others) {
        expect(await tab.locator('main').textContent()).toBe(askLink);
        expect(await tab.locator('#nav').isHidden()).toBe(true);
      }
    } finally {
      for (const tab of others) await tab.close();
    }
  });

  it('lends no token it found ended: a new tab asks for the link', async () => {
    await openEndedLink();
    await page.click('#nav a:has-text("Messages")');
    await expect.poll(notice).toBe('This link has expired or was revoked: ask for a new one.');
    const second = await page.context().newPage();
    try {
      await second.goto(`${api.url}/portal#messages`);
      await second.waitForTimeout(600);
      expect(await second.locator('main').textContent()).toBe(
        'This page opens with the link your provider gives you; it holds your access.',
      );
    } finally {
      await second.close();
    }
  });

  it('asks a new tab for the link when no open tab holds one; a tab signed out takes none', async () => {
    await openPortal();
    const second = await page.context().newPage();
    try {
      // The second tab opens a link of its own, then signs out: the first tab's session is not
      // its to take, not even after a reload.
      const access = await api.request('POST', `/api/v1/auth/app-portal-access/${appId}`, { body: {} });
      await second.goto(access.body.url);
      await second.locator('#sign-out').click();
      await expect
        .poll(() => second.locator('#notice').textContent())
        .toBe('Signed out: this link no longer opens the page.');
      await second.reload();
      await second.waitForTimeout(600);
      expect(await second.locator('main').textContent()).toBe(
        'This page opens with the link your provider gives you; it holds your access.',
      );
      // The first tab kept its own.
      await page.click('#nav a:has-text("Messages")');
      await expect.poll(() => page.locator('main h2').first().textContent()).toBe('Messages');
    } finally {
      await second.close();
    }
    await page.click('#sign-out');
    await expect.poll(notice).toBe('Signed out: this link no longer opens the page.');
    const third = await page.context().newPage();
    try {
      await third.goto(`${api.url}/portal`);
      await expect
        .poll(() => third.locator('main').textContent())
        .toBe('This page opens with the link your provider gives you; it holds your access.');
    } finally {
      await third.close();
    }
  });

  it('signs out: the token ends and the page holds nothing', async () => {
    const token = await openPortal();
    expect(await page.locator('#nav').isVisible()).toBe(true);
    await page.click('#sign-out');
    await expect.poll(notice).toBe('Signed out: this link no longer opens the page.');
    expect(await page.locator('main').textContent()).toBe(
      'This page opens with the link your provider gives you; it holds your access.',
    );
    expect(await page.locator('#sign-out').isHidden()).toBe(true);
    expect(await page.locator('#nav').isHidden()).toBe(true);
    expect(await page.locator('#app-name').textContent()).toBe('Webhooks');
    expect((await api.request('GET', `/api/v1/app/${appId}`, { token })).status).toBe(401);
    // The tab holds no token: a reload asks the API nothing.
    const seen = requested.length;
    await page.reload();
    await expect.poll(() => page.locator('main').textContent()).toMatch(/^This page opens with the link/);
    expect(requested.slice(seen).filter((r) => r.url.includes('/api/'))).toEqual([]);
  });

  it('signs out during a load: what the load brings back is not drawn', async () => {
    refusals.add(401); // the held read, answered after the token ended
    await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    await openPortal();
    // Hold the list's next read until the sign-out is done.
    const release = await holdRequests((url) => url.pathname.endsWith('/endpoint'));
    const listRead = page.waitForRequest((r) => r.url().includes('/endpoint?'));
    await page.reload();
    await listRead;
    await page.click('#sign-out');
    await expect.poll(notice).toBe('Signed out: this link no longer opens the page.');
    release();
    await page.waitForResponse((r) => r.url().includes('/endpoint?'));
    await page.waitForTimeout(200);
    expect(await page.locator('main').textContent()).toBe(
      'This page opens with the link your provider gives you; it holds your access.',
    );
    expect(await page.locator('#app-name').textContent()).toBe('Webhooks');
    expect(await notice()).toBe('Signed out: this link no longer opens the page.');
  });

  it('signs out with a token already ended, and clears the tab all the same', async () => {
    await openEndedLink();
    await page.click('#sign-out');
    await expect.poll(notice).toBe('Signed out: this link no longer opens the page.');
    await page.reload();
    await expect.poll(() => page.locator('main').textContent()).toMatch(/^This page opens with the link/);
  });

  it('works where the tab refuses storage (a frame with third-party storage blocked)', async () => {
    await page.addInitScript(() => {
      Object.defineProperty(globalThis, 'sessionStorage', {
        get() {
          throw new Error('SecurityError: storage is blocked');
        },
      });
    });
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    const access = await api.request('POST', `/api/v1/auth/app-portal-access/${appId}`, { body: {} });
    await page.goto(access.body.url);
    await page.locator(`tr[data-endpoint="${ep.id}"]`).waitFor();
    expect(page.url()).toBe(`${api.url}/portal`);
    await openEndpoint(ep.id);
    expect(await page.locator('h2.endpoint-url').textContent()).toBe(`${receiver.url}/ok`);
  });

  it('shows what endpoints hold as text, never as markup', async () => {
    const markup = '<img src=x onerror="window.pwned=1"><b>bold</b>';
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/ok`, description: markup });
    await openPortal();
    expect(await page.locator(`tr[data-endpoint="${ep.id}"] td`).nth(1).textContent()).toBe(markup);
    await openEndpoint(ep.id);
    expect(await page.locator('p.description').textContent()).toBe(markup);
    expect(await page.locator('main img, main b, #app-name b').count()).toBe(0);
  });

  it('without a link, says where it comes from and calls nothing', async () => {
    await page.goto(`${api.url}/portal`);
    await expect
      .poll(() => page.locator('main').textContent())
      .toBe('This page opens with the link your provider gives you; it holds your access.');
    expect(requested.filter((r) => r.url.includes('/api/'))).toEqual([]);
    expect(await page.locator('#sign-out').isHidden()).toBe(true);
  });
});
