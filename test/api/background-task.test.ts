import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { finishedTask } from '../../src/api/background-task.ts';
import { ManualClock } from '../../src/clock.ts';
import { listOperationalEvents } from '../../src/store/queries/operational-events.ts';
import { openTestDatabase, type TestDatabase } from '../support/databases.ts';

describe('a finished background task', () => {
  let t: TestDatabase;
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
  beforeEach(async () => {
    t = await openTestDatabase('pg');
  });
  afterEach(async () => {
    await t.drop();
  });

  const finish = (data: Record<string, unknown>, readOnly = false) =>
    finishedTask({ db: t.db, clock }, pino({ enabled: false }), 'endpoint.recover', data, { readOnly });

  it('is kept, and announced with background_task.finished in the same transaction', async () => {
    const task = await finish({ appId: 'app_1', endpointId: 'ep_1', replayed: 3 });
    const [event] = await listOperationalEvents(t.db, { limit: 10 });
    expect(event).toMatchObject({
      type: 'background_task.finished',
      appId: 'app_1',
      endpointId: 'ep_1',
      data: {
        taskId: task.id,
        status: 'finished',
        task: 'endpoint.recover',
        data: { appId: 'app_1', endpointId: 'ep_1', replayed: 3 },
      },
    });
  });

  it('announces large figures without them: they are read back from the task', async () => {
    const task = await finish({ appStats: 'x'.repeat(5000) });
    const [event] = await listOperationalEvents(t.db, { limit: 10 });
    expect(event).toMatchObject({ appId: null, data: { taskId: task.id, data: null } });
    const { rows } = await t.db.query<{ data: { appStats: string } }>(
      'select data from courier_background_tasks where id = $1',
      [task.id],
    );
    expect(rows[0]!.data.appStats).toHaveLength(5000);
  });

  it('keeps neither when one cannot be written: a read-only task fails, another is answered', async () => {
    await t.db.query('drop table courier_operational_events cascade');
    await expect(finish({ n: 1 }, true)).rejects.toThrow();
    expect((await finish({ n: 2 })).status).toBe('finished');
    const { rows } = await t.db.query('select 1 from courier_background_tasks');
    expect(rows).toEqual([]);
  });
});
