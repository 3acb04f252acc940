/**
 * A claim that runs while a resend or a replay is uncommitted takes the endpoint's other due work
 * and sets the endpoint's next due instant from what it can see, which is not yet the resent or
 * replayed delivery. Unless that claim skips the endpoint (the resend or replay holds its queue
 * row, as a publish does) or its result is read again afterwards, the delivery commits due with
 * nothing saying so, and waits for the endpoint's next publish.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claim } from '../../src/store/queries/claim.ts';
import { replayDeadLetters } from '../../src/store/queries/dead-letter.ts';
import { resendDelivery } from '../../src/store/queries/resend.ts';
import { createApp, createEndpoint, publishMessage, startApi, type TestApi } from '../e2e/support.ts';
import { blockedBy, holdOpen } from '../support/transactions.ts';

describe('a claim while a resend or replay is uncommitted', () => {
  let api: TestApi;
  let appId: string;
  beforeAll(async () => {
    api = await startApi();
    appId = await createApp(api);
  });
  afterAll(() => api.close());

  const claimAll = async () =>
    (await claim(api.db, { owner: 'w', now: api.clock.now(), leaseMs: 60_000, limit: 100 })).deliveries.map(
      (d) => d.messageId,
    );

  /** An endpoint with a dead letter and a delivery due now; the claims so far have taken all else. */
  async function deadAndDue(name: string) {
    const ep = await createEndpoint(api, appId, { url: `https://example.com/${name}`, filterTypes: [name] });
    const dead = await publishMessage(api, appId, { eventType: name });
    await api.db.query(`update courier_deliveries set state = 'failed' where message_id = $1`, [dead]);
    const due = await publishMessage(api, appId, { eventType: name });
    return { ep, dead, due };
  }

  it('a resend is claimed once committed', async () => {
    const { ep, dead, due } = await deadAndDue('resend-claim');
    const resend = await holdOpen(api.db, (tx) =>
      resendDelivery(tx, { messageId: dead, endpointId: ep.id, now: api.clock.now() }),
    );
    const meanwhile = await claimAll();
    await resend.commit();
    expect([...meanwhile, ...(await claimAll())].sort()).toEqual([dead, due].sort());
  });

  it('a replayed dead letter is claimed once committed', async () => {
    const { ep, dead, due } = await deadAndDue('replay-claim');
    // Test hook only: pause the replay's statement as it rewrites the dead letter.
    await api.db.query(`create or replace function pause_hook() returns trigger language plpgsql as $$
      begin if old.message_id = '${dead}' and old.state = 'failed' then
        perform pg_advisory_xact_lock_shared(4243); end if; return new; end $$`);
    await api.db.query(
      'create trigger pause_hook before update on courier_deliveries for each row execute function pause_hook()',
    );
    let meanwhile: string[] = [];
    try {
      const gate = await holdOpen(api.db, (tx) => tx.query('select pg_advisory_xact_lock(4243)'));
      const replay = replayDeadLetters(api.db, { endpointId: ep.id }, api.clock.now());
      await blockedBy(api.db, gate.pid);
      meanwhile = await claimAll();
      await gate.commit();
      expect((await replay).replayed).toBe(1);
    } finally {
      await api.db.query('drop trigger pause_hook on courier_deliveries');
    }
    expect([...meanwhile, ...(await claimAll())].sort()).toEqual([dead, due].sort());
  });
});
