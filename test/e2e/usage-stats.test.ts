import { Svix } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { BACKENDS } from '../support/databases.ts';
import { virtualWorker } from '../support/engine.ts';
import { createApp, createEndpoint, locs, publishMessage, startApi, type TestApi, TOKEN } from './support.ts';

describe.each(BACKENDS)('usage statistics on %s', (backend) => {
  let api: TestApi;
  let receiver: Receiver;
  let engine: ReturnType<typeof virtualWorker>;
  let svix: Svix;
  let status = 200;
  const apps = {} as Record<'acme' | 'globex' | 'idle' | 'gone', string>;
  const eps = {} as Record<'invoices' | 'everything' | 'refunds' | 'globex', string>;
  // Ids carry their time and the process's id factory never goes back: each backend's run starts
  // a day after the previous one's.
  const start = Date.UTC(2026, 1, 1 + BACKENDS.indexOf(backend), 12);
  const at = (ms: number) => new Date(ms).toISOString();
  const SECOND = 1000;

  /** The figures of a stats task, read back as a caller does. */
  const appStats = async (body: Record<string, unknown>) => {
    const answer = await api.request('POST', '/api/v1/stats/usage/app', { body });
    expect(answer.status).toBe(202);
    const task = await api.request('GET', `/api/v1/background-task/${answer.body.id}`);
    return { answer: answer.body, stats: task.body.data.appStats };
  };

  beforeAll(async () => {
    api = await startApi({ backend, clock: new ManualClock(start) });
    svix = new Svix(TOKEN, { serverUrl: api.url });
    receiver = await startReceiver((_req, res) => {
      res.writeHead(status);
      res.end();
    });
    engine = virtualWorker(api.db, { clock: api.clock });
    const hook = `${receiver.url}/hook`;
    apps.acme = await createApp(api, { uid: 'acme' });
    apps.globex = await createApp(api);
    apps.idle = await createApp(api, { uid: 'idle' });
    apps.gone = await createApp(api);
    eps.invoices = (await createEndpoint(api, apps.acme, { url: hook, filterTypes: ['invoice.paid'] })).id;
    eps.everything = (await createEndpoint(api, apps.acme, { url: hook })).id;
    eps.refunds = (await createEndpoint(api, apps.acme, { url: hook, filterTypes: ['refund.made'] })).id;
    eps.globex = (
      await createEndpoint(api, apps.globex, { url: hook, filterTypes: ['user.created', 'invoice.paid'] })
    ).id;
    await createEndpoint(api, apps.globex, { url: hook, filterTypes: ['audit'], disabled: true });
    await createEndpoint(api, apps.gone, { url: hook });
  });
  afterAll(async () => {
    await engine.sender.close();
    await receiver.close();
    await api.close();
  });

  it('counts each message and endpoint it was for once, however many attempts, in [since, until)', async () => {
    const t0 = api.clock.now();
    api.clock.advance(SECOND);
    // Two destinations, both delivered: their queue rows are gone, their attempts stay.
    const paid = await publishMessage(api, apps.acme, { eventType: 'invoice.paid' });
    await engine.worker.runOnce();
    // Resent and delivered again: two delivered attempts, still the same destination; and its
    // payload expunged since, which changes nothing.
    const resend = await api.request(
      'POST',
      `/api/v1/app/${apps.acme}/msg/${paid}/endpoint/${eps.invoices}/resend`,
    );
    expect(resend.status).toBe(202);
    await engine.worker.runOnce();
    expect((await api.request('DELETE', `/api/v1/app/${apps.acme}/msg/${paid}/content`)).status).toBe(204);
    api.clock.advance(SECOND);
    // Two destinations dead-lettered (the catch-all endpoint's too), then one's endpoint deleted,
    // which drops its dead letter: its attempt stays, and so does the count.
    status = 410;
    await publishMessage(api, apps.acme, { eventType: 'refund.made' });
    await engine.worker.runOnce();
    expect((await api.request('DELETE', `/api/v1/app/${apps.acme}/endpoint/${eps.refunds}`)).status).toBe(
      204,
    );
    api.clock.advance(SECOND);
    // One destination that failed and waits for its retry, after two attempts.
    status = 500;
    await publishMessage(api, apps.acme, { eventType: 'user.created' });
    await engine.worker.runOnce();
    api.clock.advance(3_600_000);
    await engine.worker.runOnce();
    status = 200;
    api.clock.advance(SECOND);
    const late = api.clock.now();
    await publishMessage(api, apps.gone);
    await engine.worker.runOnce();
    // Never tried yet: a destination too.
    await publishMessage(api, apps.globex, { eventType: 'user.created' });
    // Deleted since: its delivery happened, and is still counted.
    expect((await api.request('DELETE', `/api/v1/app/${apps.gone}`)).status).toBe(204);
    api.clock.advance(SECOND);
    const end = api.clock.now();

    const { answer, stats } = await appStats({ since: at(t0), until: at(end) });
    expect(answer).toMatchObject({ status: 'finished', task: 'application.stats', unresolvedAppIds: [] });
    expect(stats).toEqual(
      [
        { appId: apps.acme, appUid: 'acme', messageDestinations: 5 },
        { appId: apps.globex, appUid: null, messageDestinations: 1 },
        { appId: apps.gone, appUid: null, messageDestinations: 1 },
      ].sort((a, b) => (a.appId < b.appId ? -1 : 1)),
    );
    // The window is half-open: a message created at `until` belongs to the next one.
    const before = await appStats({ since: at(t0), until: at(late) });
    expect(before.stats).toEqual([{ appId: apps.acme, appUid: 'acme', messageDestinations: 5 }]);
    const after = await appStats({ since: at(late), until: at(end) });
    expect(after.stats.map((s: { appId: string }) => s.appId).sort()).toEqual(
      [apps.globex, apps.gone].sort(),
    );
  });

  it('covers the applications named by id or uid, zeros included, and names the ones it cannot find', async () => {
    const { answer, stats } = await appStats({
      since: at(start - 86_400_000),
      until: at(api.clock.now() + SECOND),
      appIds: ['idle', apps.globex, 'acme', 'nobody', apps.acme, 'nobody'],
    });
    expect(answer.unresolvedAppIds).toEqual(['nobody']);
    expect(stats).toEqual([
      { appId: apps.idle, appUid: 'idle', messageDestinations: 0 },
      { appId: apps.globex, appUid: null, messageDestinations: 1 },
      { appId: apps.acme, appUid: 'acme', messageDestinations: 5 },
    ]);
    // The official SDK: the task, then its figures.
    const task = await svix.statistics.aggregateAppStats({
      since: new Date(start),
      until: new Date(api.clock.now() + SECOND),
      appIds: ['acme', 'app_00000000000000000000000000'],
    });
    expect(task).toMatchObject({ status: 'finished', task: 'application.stats' });
    expect(task.unresolvedAppIds).toEqual(['app_00000000000000000000000000']);
    expect((await svix.backgroundTask.get(task.id)).data).toEqual({
      appStats: [{ appId: apps.acme, appUid: 'acme', messageDestinations: 5 }],
    });
  });

  it('lists what the endpoints of each live application subscribe to', async () => {
    const task = await svix.statistics.aggregateEventTypes();
    expect(task).toMatchObject({ status: 'finished', task: 'event-type.aggregate' });
    const { data } = await svix.backgroundTask.get(task.id);
    expect(data.event_types).toEqual(
      [
        { appId: apps.acme, explicitlySubscribedEventTypes: ['invoice.paid'], hasCatchAllEndpoint: true },
        {
          appId: apps.globex,
          explicitlySubscribedEventTypes: ['audit', 'invoice.paid', 'user.created'],
          hasCatchAllEndpoint: false,
        },
      ].sort((a, b) => (a.appId < b.appId ? -1 : 1)),
    );
    // Listed among the background tasks by their Svix type.
    const list = await api.request('GET', '/api/v1/background-task?task=event-type.aggregate');
    expect(list.body.data.map((t: { id: string }) => t.id)).toContain(task.id);
  });

  it('fails when its task cannot be kept, the figures being in it; a replay, done already, answers anyway', async () => {
    await api.db.query(`create function refuse_task() returns trigger language plpgsql as $$
      begin raise exception 'task table refuses'; end $$`);
    await api.db.query(
      'create trigger refuse_task before insert on courier_background_tasks for each row execute function refuse_task()',
    );
    try {
      const now = api.clock.now();
      const stats = await api.request('POST', '/api/v1/stats/usage/app', {
        body: { since: at(now - SECOND), until: at(now) },
      });
      expect(stats.status).toBe(500);
      expect(stats.body).toMatchObject({ code: expect.any(String) });
      expect((await api.request('PUT', '/api/v1/stats/usage/event-types')).status).toBe(500);
      const recover = await api.request('POST', `/api/v1/app/${apps.acme}/endpoint/${eps.invoices}/recover`, {
        body: { since: at(now - SECOND) },
      });
      expect(recover.status).toBe(202);
    } finally {
      await api.db.query('drop trigger refuse_task on courier_background_tasks');
      await api.db.query('drop function refuse_task()');
    }
  });

  it('starts a window reaching back before 1970 there', async () => {
    const { stats } = await appStats({ since: '1969-12-31T00:00:00Z', until: '1970-01-02T00:00:00Z' });
    expect(stats).toEqual([]);
  });

  it('refuses an empty or reversed window, one over 31 days, names that find nothing, a bad id and a missing bound, keeping no task', async () => {
    const tasks = async () =>
      (await api.request('GET', '/api/v1/background-task?limit=250')).body.data.length;
    const kept = await tasks();
    const now = api.clock.now();
    const bad = [
      [{ since: at(now), until: at(now) }, ['body.until']],
      [{ since: at(now), until: at(now - SECOND) }, ['body.until']],
      [{ since: at(now - 32 * 86_400_000), until: at(now) }, ['body.until']],
      [
        { since: at(now - SECOND), until: at(now), appIds: ['nobody', 'app_00000000000000000000000000'] },
        ['body.appIds'],
      ],
      [{ since: at(now - SECOND), until: at(now), appIds: [] }, ['body.appIds']],
      [{ since: at(now - SECOND), until: at(now), appIds: ['not an id'] }, ['body.appIds.0']],
      [{ until: at(now) }, ['body.since']],
    ] as const;
    for (const [body, where] of bad) {
      const answer = await api.request('POST', '/api/v1/stats/usage/app', { body });
      expect(answer.status, JSON.stringify(body)).toBe(422);
      expect(locs(answer)).toEqual(where);
    }
    expect(await tasks()).toBe(kept);
  });
});
