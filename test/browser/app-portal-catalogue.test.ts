/**
 * The app portal's event catalogue in a real browser: the event types the token sees, with their
 * descriptions, the latest version's schema and its example. The set-up and the checks after each
 * test are in portal-harness.ts.
 */
import { describe, expect, it } from 'vitest';
import { api, notice, openPortal, page, refusals, type Tab, usePortal } from './portal-harness.ts';

describe('app portal in Chromium: the event catalogue', () => {
  usePortal();

  const rows = () => page.locator('tr[data-event-type]');
  const openCatalogue = async () => {
    await page.click('#nav a:has-text("Event types")');
    await rows().first().waitFor();
  };

  it('lists the event types this token sees, with the latest schema and its example', async () => {
    const type = (body: Record<string, unknown>) => api.request('POST', '/api/v1/event-type', { body });
    const schema = (version: number) => ({
      type: 'object',
      title: `v${version}`,
      properties: { amount: { type: 'integer' } },
      examples: [{ amount: version * 100 }],
    });
    expect(
      (
        await type({
          name: 'order.shipped',
          description: 'An order <i>left</i>',
          schemas: { 1: schema(1), 2: schema(2) },
        })
      ).status,
    ).toBe(201);
    expect((await type({ name: 'order.legacy', description: 'old', deprecated: true })).status).toBe(201);
    expect((await type({ name: 'beta.thing', description: 'beta', featureFlags: ['beta'] })).status).toBe(
      201,
    );
    expect((await type({ name: 'gone.type', description: 'archived', archived: true })).status).toBe(201);
    // A version that is no schema at all is passed over, and one without examples shows none.
    const odd = await type({
      name: 'odd.type',
      description: 'odd',
      schemas: { 1: { type: 'object' }, 2: null },
    });
    expect(odd.status, odd.text).toBe(201);
    await openPortal();
    await openCatalogue();
    expect(await page.locator('#nav a[aria-current=page]').textContent()).toBe('Event types');
    // Those the harness makes too; the flagged one hidden from a token without its flag, the archived one from all.
    expect(await rows().evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-event-type')))).toEqual([
      'invoice.paid',
      'odd.type',
      'order.legacy',
      'order.shipped',
      'user.created',
    ]);
    const shipped = page.locator('tr[data-event-type="order.shipped"] td');
    expect(await shipped.nth(1).textContent()).toBe('An order <i>left</i>');
    expect(await page.locator('tr[data-event-type="order.legacy"] td').first().textContent()).toBe(
      'order.legacy (deprecated)',
    );
    expect(await page.locator('tr[data-event-type="order.legacy"] td').last().textContent()).toBe(
      'none given',
    );
    await shipped.locator('summary').click();
    expect(await shipped.locator('summary').textContent()).toBe('Version 2');
    expect(JSON.parse((await shipped.locator('pre.example').textContent()) ?? '')).toEqual({ amount: 200 });
    expect(JSON.parse((await shipped.locator('pre.json-schema').textContent()) ?? '')).toEqual(schema(2));
    const oddCell = page.locator('tr[data-event-type="odd.type"] td').last();
    await oddCell.locator('summary').click();
    expect(await oddCell.locator('summary').textContent()).toBe('Version 1');
    expect(await oddCell.locator('pre.example').count()).toBe(0);
    expect(JSON.parse((await oddCell.locator('pre.json-schema').textContent()) ?? '')).toEqual({
      type: 'object',
    });

    // A token with the flag sees the flagged type; a reload keeps the view.
    await openPortal({ featureFlags: ['beta'] });
    await openCatalogue();
    expect(await page.locator('tr[data-event-type="beta.thing"]').count()).toBe(1);
    await page.reload();
    await rows().first().waitFor();
    expect(await rows().count()).toBe(6);
  });

  it('finds event types by the words of their name or description, on every page of the catalogue, kept in the #', async () => {
    const type = async (name: string, description: string, more: Record<string, unknown> = {}) =>
      expect(
        (await api.request('POST', '/api/v1/event-type', { body: { name, description, ...more } })).status,
      ).toBe(201);
    await type('parcel.shipped', 'A parcel left the warehouse');
    await type('parcel.lost', 'A parcel went missing');
    await type('refund.issued', 'Money back for a PARCEL');
    await type('beta.parcel', 'A parcel, in beta', { featureFlags: ['beta'] });
    // Past the first page the API answers (250): the search reads them all.
    for (let i = 0; i < 250; i++) await type(`zz.filler${String(i).padStart(3, '0')}`, 'filler');
    await openPortal();
    await openCatalogue();
    const names = () => rows().evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-event-type')));
    const find = async (words: string) => {
      await page.fill('input[name=q]', words);
      await page.click('form.find button[type=submit]');
    };
    await find('parcel');
    // Name or description, in any case; the flagged one hidden from a token without its flag.
    await expect.poll(names).toEqual(['parcel.lost', 'parcel.shipped', 'refund.issued']);
    // The keyboard stays in the box drawn anew.
    const focused = () =>
      page.evaluate(() => (globalThis as unknown as Tab).document.activeElement?.getAttribute('name'));
    expect(await focused()).toBe('q');
    await find(' Parcel   SHIPPED ');
    await expect.poll(names).toEqual(['parcel.shipped']);
    expect(page.url()).toContain('#event-types?q=Parcel+++SHIPPED');
    // Every word, each in the name or the description.
    await find('refund parcel');
    await expect.poll(names).toEqual(['refund.issued']);
    // The same search again reads the catalogue anew.
    await type('parcel.refunded', 'A refund for a parcel');
    await find('refund parcel');
    await expect.poll(names).toEqual(['parcel.refunded', 'refund.issued']);
    await find('filler249');
    await expect.poll(names).toEqual(['zz.filler249']);
    await find('nothing like it');
    await expect
      .poll(() => page.locator('main p.empty').textContent())
      .toBe('No event type matches “nothing like it”.');
    // A reload keeps the search; the way back shows the catalogue a page at a time.
    await find('parcel ship');
    await expect.poll(names).toEqual(['parcel.shipped']);
    await page.reload();
    await expect.poll(names).toEqual(['parcel.shipped']);
    expect(await page.inputValue('input[name=q]')).toBe('parcel ship');
    await page.click('a:has-text("← All event types")');
    await expect.poll(() => rows().count()).toBe(50);
    expect(await page.inputValue('input[name=q]')).toBe('');
    expect(await page.locator('button.more').isVisible()).toBe(true);

    // A search whose read fails leads back to the whole catalogue; the catalogue's own, to the endpoints.
    refusals.add(500);
    const failing = '**/api/v1/event-type?with_content=true*';
    await page.route(failing, (route) =>
      route.fulfill({
        status: 500,
        contentType: 'application/json',
        body: '{"code":"boom","detail":"Boom"}',
      }),
    );
    await find('parcel');
    await expect.poll(() => page.locator('main a').textContent()).toBe('← All event types');
    expect(await notice()).toBe('Boom');
    await page.click('main a');
    await expect.poll(() => page.locator('main a').textContent()).toBe('← All endpoints');
    await page.unroute(failing);
    // The failed search owes no focus to the catalogue drawn next.
    await page.click('main a');
    await openCatalogue();
    expect(await focused()).not.toBe('q');
  });
});
