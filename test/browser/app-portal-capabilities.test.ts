/**
 * The app portal offers what the link's token may do and nothing else (GET /auth/session says
 * what that is), and says until when the link works. The set-up and the checks after each test are
 * in portal-harness.ts.
 */
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { createEndpoint, publishMessage } from '../e2e/support.ts';
import {
  api,
  appId,
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
} from './portal-harness.ts';

describe('app portal in Chromium: what the token may do', () => {
  usePortal();

  /** The view's buttons on show, then its folded sections, by their labels. */
  const offered = async () => {
    // What is left out is skipped, not written as text.
    expect(await page.locator('main').textContent()).not.toMatch(/false|null|undefined/);
    return [
      ...(await page.locator('main button:visible').allTextContents()),
      ...(await page.locator('main > details > summary').allTextContents()),
    ];
  };

  it('offers each token the actions its capabilities allow, on every view', async () => {
    // One attempt to resend and one dead letter to replay: the endpoint answers 410.
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/gone` });
    const msgId = await publishMessage(api, appId, { eventType: 'invoice.paid' });
    expect(await engine.worker.runOnce()).toBe(1);
    const views = async (capabilities: string[] | null) => {
      await openPortal(capabilities ? { capabilities } : {});
      const addForm = await page.locator('form.endpoint-form').count();
      await openEndpoint(ep.id);
      // The dead letter's row is drawn with the view: its Replay is there or not with the rest.
      await page.locator('tr[data-dead-letter]').waitFor();
      const onEndpoint = await offered();
      await page.goto(`${api.url}/portal#message=${msgId}`);
      await page.locator('h2.message-type').waitFor();
      return { addForm, onEndpoint, onMessage: await offered() };
    };
    expect(await views(['ViewBase'])).toEqual({
      addForm: 0,
      onEndpoint: ['Refresh'],
      onMessage: ['Refresh'],
    });
    expect(await views(['ViewBase', 'ViewEndpointSecret'])).toEqual({
      addForm: 0,
      onEndpoint: ['Show signing secret', 'Refresh'],
      onMessage: ['Refresh'],
    });
    expect(await views(['ViewBase', 'ManageEndpointSecret'])).toEqual({
      addForm: 0,
      onEndpoint: ['Show signing secret', 'Rotate signing secret', 'Refresh'],
      onMessage: ['Refresh'],
    });
    expect(await views(['ViewBase', 'CreateAttempts'])).toEqual({
      addForm: 0,
      onEndpoint: ['Send', 'Refresh', 'Resend', 'Replay all', 'Replay'],
      onMessage: ['Refresh', 'Resend'],
    });
    expect(await views(['ViewBase', 'ManageEndpoint'])).toEqual({
      addForm: 1,
      onEndpoint: [
        'Pause',
        'Show signing secret',
        'Rotate signing secret',
        'Delete',
        'Refresh',
        'Custom headers',
        'Edit',
      ],
      onMessage: ['Refresh'],
    });
    expect(await views(null)).toEqual({
      addForm: 1,
      onEndpoint: [
        'Pause',
        'Show signing secret',
        'Rotate signing secret',
        'Delete',
        'Send',
        'Refresh',
        'Resend',
        'Replay all',
        'Replay',
        'Custom headers',
        'Edit',
      ],
      onMessage: ['Refresh', 'Resend'],
    });
  });

  it('rotates the signing secret: the new one shown, both signing for the grace period', async () => {
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    const secretOf = async () =>
      (await api.request('GET', `/api/v1/app/${appId}/endpoint/${ep.id}/secret`)).body.key as string;
    const before = await secretOf();
    await openPortal({ capabilities: ['ViewBase', 'ManageEndpointSecret'] });
    await openEndpoint(ep.id);
    page.once('dialog', (dialog) => dialog.dismiss());
    await page.click('button:has-text("Rotate signing secret")');
    // A round trip after the dismissal: a rotation it had sent would have gone out before it.
    const read = page.waitForResponse((r) => r.url().endsWith('/secret'));
    await page.click('button:has-text("Show signing secret")');
    await read;
    expect(requested.filter((r) => r.url.endsWith('/secret/rotate'))).toEqual([]);
    expect(await secretOf()).toBe(before);
    page.once('dialog', (dialog) => dialog.accept());
    await page.click('button:has-text("Rotate signing secret")');
    await expect.poll(notice).toBe('Signing secret rotated: the previous one signs too for 24 hours.');
    const after = await secretOf();
    expect(after).not.toBe(before);
    await expect.poll(() => page.locator('code.secret').textContent()).toBe(after);
    // Each delivery is signed with both until the grace period ends, as the official library signs
    // (its verify() would judge the timestamp by the real clock, and this test's is virtual).
    await publishMessage(api, appId, { eventType: 'invoice.paid' });
    expect(await engine.worker.runOnce()).toBe(1);
    const delivered = receiver.requests.at(-1)!;
    const header = (name: string) => String(delivered.headers[name]);
    const signedAs = (key: string) =>
      new Webhook(key).sign(
        header('webhook-id'),
        new Date(Number(header('webhook-timestamp')) * 1000),
        delivered.body.toString(),
      );
    expect(header('webhook-signature').split(' ').sort()).toEqual([signedAs(before), signedAs(after)].sort());
  });

  it('past the most earlier secrets that may sign, rotates only when told the current one stops signing at once', async () => {
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    const path = `/api/v1/app/${appId}/endpoint/${ep.id}/secret`;
    const secretOf = async () => (await api.request('GET', path)).body.key as string;
    // Five rotations within the grace period: five earlier secrets sign beside the current one.
    for (let i = 0; i < 5; i++)
      expect((await api.request('POST', `${path}/rotate`, { body: {} })).status).toBe(204);
    const current = await secretOf();
    await openPortal({ capabilities: ['ViewBase', 'ManageEndpointSecret'] });
    await openEndpoint(ep.id);
    /** Answers the rotation's questions in turn (its confirmation, then the one past the limit). */
    const answer = (...accepts: (boolean | (() => boolean))[]) => {
      const asked: string[] = [];
      page.on('dialog', function reply(dialog) {
        asked.push(dialog.message());
        if (asked.length === accepts.length) page.off('dialog', reply);
        const accept = accepts[asked.length - 1]!;
        void ((typeof accept === 'function' ? accept() : accept) ? dialog.accept() : dialog.dismiss());
      });
      return asked;
    };
    const rotations = () => requested.filter((r) => r.url.endsWith('/secret/rotate')).map((r) => r.body);
    refusals.add(400);
    const declined = answer(true, false);
    await page.click('button:has-text("Rotate signing secret")');
    await expect
      .poll(notice)
      .toBe(
        'Not rotated: 5 earlier secrets still sign; rotate again once one of them stops signing (24 hours after its rotation, by default).',
      );
    expect(declined[1]).toMatch(
      /^5 earlier signing secrets still sign, the most there can be\. Rotate anyway/,
    );
    expect(rotations()).toEqual(['{}']);
    expect(await secretOf()).toBe(current);

    answer(true, true);
    await page.click('button:has-text("Rotate signing secret")');
    await expect.poll(notice).toBe('Signing secret rotated: the previous one no longer signs.');
    const after = await secretOf();
    expect(after).not.toBe(current);
    await expect.poll(() => page.locator('code.secret').textContent()).toBe(after);
    expect(rotations()).toEqual(['{}', '{}', '{}', '{"gracePeriodSeconds":0}']);
    /** Which of these secrets signed the next delivery, and how many signatures it carried. */
    const signersOfNext = async (keys: Record<string, string>) => {
      await publishMessage(api, appId, { eventType: 'invoice.paid' });
      expect(await engine.worker.runOnce()).toBe(1);
      const delivered = receiver.requests.at(-1)!;
      const header = (name: string) => String(delivered.headers[name]);
      const signatures = header('webhook-signature').split(' ');
      const signedAs = (key: string) =>
        new Webhook(key).sign(
          header('webhook-id'),
          new Date(Number(header('webhook-timestamp')) * 1000),
          delivered.body.toString(),
        );
      return {
        count: signatures.length,
        signers: Object.keys(keys).filter((name) => signatures.includes(signedAs(keys[name]!))),
      };
    };
    // The new secret and the five earlier ones still in their grace period sign, not the replaced one.
    expect(await signersOfNext({ current, after })).toEqual({ count: 6, signers: ['after'] });

    // The earlier secrets' grace periods end while the question is open: the current one keeps its own.
    answer(true, () => {
      api.clock.advance(24 * 3_600_000);
      return true;
    });
    await page.click('button:has-text("Rotate signing secret")');
    await expect.poll(notice).toBe('Signing secret rotated: the previous one signs too for 24 hours.');
    expect(rotations()).toEqual(['{}', '{}', '{}', '{"gracePeriodSeconds":0}', '{}', '{}']);
    const last = await secretOf();
    expect(await signersOfNext({ after, last })).toEqual({ count: 2, signers: ['after', 'last'] });
  });

  it('reads what the token may do beside the view, and offers nothing before it is known', async () => {
    await createEndpoint(api, appId, { url: `${receiver.url}/` });
    const release = await holdRequests('**/api/v1/auth/session');
    const access = await api.request('POST', `/api/v1/auth/app-portal-access/${appId}`, {
      body: { readOnly: true },
    });
    const from = requested.length;
    try {
      await page.goto(access.body.url);
      // The view's own reads go out while the session's answer is held, not after it.
      const reads = () => requested.slice(from).map((r) => r.url);
      await expect.poll(reads).toContain(`${api.url}/api/v1/app/${appId}`);
      expect(reads()).toContain(`${api.url}/api/v1/event-type?limit=250`);
      await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 200)));
      expect(await page.locator('main').getAttribute('aria-busy')).toBe('true');
      expect(await page.locator('form.endpoint-form').count()).toBe(0);
    } finally {
      release();
    }
    await expect.poll(() => page.locator('main').getAttribute('aria-busy')).toBe('false');
    await page.locator('tr[data-endpoint]').waitFor();
    // A read-only link: no form to add an endpoint, drawn or left behind.
    expect(await page.locator('form.endpoint-form').count()).toBe(0);
    expect(await page.locator('#expires').textContent()).toMatch(/^This link works until /);
  });

  it('says until when the link works, as the operator moves it, and forgets it with the token', async () => {
    const until = async (token: string) => {
      const { expiresAt } = (await api.request('GET', '/api/v1/auth/session', { token })).body;
      return `This link works until ${await page.evaluate((iso: string) => new Date(iso).toLocaleString(), expiresAt)}`;
    };
    const token = await openPortal({ expiry: 7200, readOnly: true });
    const first = await until(token);
    expect(await page.locator('#expires').textContent()).toBe(first);
    // The operator ends it sooner: the next view says so.
    expect(
      (await api.request('POST', `/api/v1/auth/app/${appId}/expire-all`, { body: { expiry: 3600 } })).status,
    ).toBe(204);
    const sooner = await until(token);
    expect(sooner).not.toBe(first);
    await page.click('#nav a:has-text("Messages")');
    await expect.poll(() => page.locator('#expires').textContent()).toBe(sooner);

    // Ended: the page says so and shows nothing of the application.
    refusals.add(401);
    api.clock.advance(3_600_000);
    await page.click('#nav a:has-text("Endpoints")');
    await expect.poll(notice).toBe('This link has expired or was revoked: ask for a new one.');
    expect(await page.locator('main').textContent()).toBe('');
    expect(await page.locator('#expires').textContent()).toBe('');

    await openPortal({ expiry: 7200 });
    await page.click('#sign-out');
    await expect.poll(notice).toBe('Signed out: this link no longer opens the page.');
    expect(await page.locator('#expires').textContent()).toBe('');
  });
});
