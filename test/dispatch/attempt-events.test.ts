import type {
  MessageAttemptExhaustedEventData,
  MessageAttemptFailingEventData,
  MessageAttemptRecoveredEventData,
} from 'svix';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { EXHAUSTED, FAILING, RECOVERED, reportAttemptEvents } from '../../src/dispatch/attempt-events.ts';
import { ensureOperatorEndpoint, OperatorRelay } from '../../src/dispatch/operator-webhook.ts';
import { type Logger, silentLogger } from '../../src/logger.ts';
import { type Completion, complete } from '../../src/store/queries/complete.ts';
import { replayDeadLetters } from '../../src/store/queries/dead-letter.ts';
import { listOperationalEvents } from '../../src/store/queries/operational-events.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { virtualWorker } from '../support/engine.ts';
import { deliveredCompletion, makeApp, makeEndpoint, publishJson } from '../support/fixtures.ts';

describe.each(BACKENDS)('message.attempt.exhausted, .failing and .recovered on %s', (backend) => {
  let t: TestDatabase;
  let receiver: Receiver;
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
  /** Run by the receiver before it answers. */
  let onRequest: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    // /<status> answers that status; /flaky/<n>/<key> answers 503 to the first n requests of its key, then 200.
    const seen = new Map<string, number>();
    receiver = await startReceiver(async (req, res) => {
      await onRequest?.();
      const flaky = /^\/flaky\/(\d+)\/(.+)$/.exec(req.url!);
      if (flaky) {
        const n = (seen.get(flaky[2]!) ?? 0) + 1;
        seen.set(flaky[2]!, n);
        res.writeHead(n <= Number(flaky[1]) ? 503 : 200);
      } else {
        res.writeHead(Number(req.url!.slice(1)));
      }
      res.end();
    });
  });
  afterAll(() => receiver.close());
  beforeEach(async () => {
    t = await openTestDatabase(backend);
  });
  afterEach(async () => {
    onRequest = undefined;
    await t.drop();
  });

  const events = () => listOperationalEvents(t.db, { limit: 100 });

  /** An application with one endpoint answering `status` (or a /flaky/… path), and one message published to it. */
  async function oneMessage(status: number | string, uid?: string) {
    const app = await makeApp(t.db, clock.now());
    const ep = await makeEndpoint(t.db, app.id, clock.now(), { url: `${receiver.url}/${status}`, uid });
    const msg = await publishJson(t.db, app.id, clock.now(), { n: 1 }, { eventId: `evt-${status}` });
    return { appId: app.id, endpointId: ep.id, messageId: msg.messageId };
  }

  /** Waits, up to 5 s, for the relay to send every event recorded for it. */
  async function allRelayed() {
    for (let i = 0; i < 250; i++) {
      const { rows } = await t.db.query('select 1 from courier_operational_events where not relayed limit 1');
      if (rows.length === 0) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('events left unrelayed');
  }

  /** Sets when a message's payload retention runs out, as a publish with payloadRetentionHours does. */
  const expirePayloadAt = (messageId: string, at: number) =>
    t.db.query('insert into courier_payload_expiries (message_id, expires_at) values ($1, $2)', [
      messageId,
      new Date(at),
    ]);

  /** Each delivery of a message: its state, last error and the attempts made. */
  async function outcome(messageId: string) {
    const { rows } = await t.db.query(
      `select d.state, d.last_error, count(a.id)::int as made
         from courier_deliveries d join courier_attempts a on a.delivery_id = d.id
        where d.message_id = $1 group by d.id`,
      [messageId],
    );
    return rows;
  }

  /** Runs a worker on virtual time until nothing more is due. */
  async function deliverAll(options: { relay?: OperatorRelay; logger?: Logger; maxAttempts?: number } = {}) {
    const { worker, sender } = virtualWorker(t.db, {
      clock,
      operatorRelay: options.relay,
      logger: options.logger,
      policy: { giveUp: { maxAttempts: options.maxAttempts ?? 3, windowMs: 86_400_000 } },
    });
    for (let i = 0; i < 20 && (await worker.runOnce()) >= 0; i++) {
      if (options.relay) await allRelayed(); // the worker starts the relay as it records events
      clock.advance(3_600_000);
    }
    await sender.close();
  }

  it('announces a delivery refused for good, with the data Svix sends', async () => {
    const { appId, endpointId, messageId } = await oneMessage(400, 'billing');
    await deliverAll();
    const [event, ...rest] = await events();
    expect(rest).toEqual([]);
    expect(event).toMatchObject({ id: expect.stringMatching(/^opev_/), type: EXHAUSTED, appId, endpointId });
    const { rows } = await t.db.query<{ id: string; started_at: Date }>(
      'select id, started_at from courier_attempts where message_id = $1',
      [messageId],
    );
    const svixData: MessageAttemptExhaustedEventData = {
      appId,
      appUid: null,
      endpointId,
      msgId: messageId,
      msgEventId: 'evt-400',
      lastAttempt: { id: rows[0]!.id, responseStatusCode: 400, timestamp: rows[0]!.started_at },
    };
    expect(event!.data).toEqual({
      ...svixData,
      lastAttempt: { ...svixData.lastAttempt, timestamp: rows[0]!.started_at.toISOString() },
      endpointUid: 'billing',
      state: 'failed',
      attempts: 1,
      reason: expect.stringMatching(/^HTTP 400 Bad Request: .*not retried$/),
    });
  });

  it('announces a delivery out of attempts once, after its last attempt', async () => {
    const { endpointId } = await oneMessage(503);
    await deliverAll({ maxAttempts: 3 });
    const all = await events();
    expect(all).toHaveLength(1);
    expect(all[0]).toMatchObject({
      endpointId,
      data: { state: 'expired', attempts: 3, lastAttempt: { responseStatusCode: 503 } },
    });
  });

  it('says nothing of a delivery delivered, retried fewer than four times, or whose completion its worker no longer owns', async () => {
    await oneMessage(200);
    await oneMessage('flaky/3/a'); // delivered at its fourth attempt, after three failures
    await deliverAll({ maxAttempts: 100 });
    expect(await events()).toEqual([]);
    const { rows } = await t.db.query<{ number: number }>(
      `select number from courier_attempts where decision = 'delivered' order by number`,
    );
    expect(rows).toEqual([{ number: 1 }, { number: 4 }]);

    // A completion written after another worker took the delivery over changes nothing.
    const late = await leasedTo('other', await oneMessage(400));
    await completeAsWorker('late-worker', late);
    expect(await events()).toEqual([]);
  });

  it('announces a delivery failing at its fourth failure, once, with the data Svix sends', async () => {
    const { appId, endpointId, messageId } = await oneMessage(503, 'billing');
    await deliverAll({ maxAttempts: 100 });
    const [event, ...rest] = await events();
    expect(rest).toEqual([]);
    expect(event).toMatchObject({ type: FAILING, appId, endpointId });
    const { rows } = await t.db.query<{ id: string; started_at: Date }>(
      'select id, started_at from courier_attempts where message_id = $1 and number = 4',
      [messageId],
    );
    const svixData: MessageAttemptFailingEventData = {
      appId,
      appUid: null,
      endpointId,
      msgId: messageId,
      msgEventId: 'evt-503',
      lastAttempt: { id: rows[0]!.id, responseStatusCode: 503, timestamp: rows[0]!.started_at },
    };
    expect(event!.data).toEqual({
      ...svixData,
      lastAttempt: { ...svixData.lastAttempt, timestamp: rows[0]!.started_at.toISOString() },
      endpointUid: 'billing',
      attempts: 4,
      reason: expect.stringMatching(/^HTTP 503/),
      nextAttempt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    const { rows: delivery } = await t.db.query<{ next_attempt_at: Date; attempts: number }>(
      'select next_attempt_at, attempts from courier_deliveries where message_id = $1',
      [messageId],
    );
    expect(delivery[0]!.attempts).toBeGreaterThan(4); // tried on after it, announced once
  });

  it('does not announce failing a fourth failure whose payload retention ran out while it was sent: it ends the delivery', async () => {
    const { messageId } = await oneMessage(503);
    let requests = 0;
    // Claimed before its expiry, which falls due while the fourth request is open.
    onRequest = async () => {
      if (++requests === 4) await expirePayloadAt(messageId, clock.now());
    };
    await deliverAll({ maxAttempts: 100 });
    expect(await events()).toEqual([]);
    expect(await outcome(messageId)).toEqual([{ state: 'failed', last_error: 'payload expired', made: 4 }]);
  });

  it('does not announce failing a delivery whose payload retention ran out before its fourth attempt: it ends it', async () => {
    const { messageId } = await oneMessage(503);
    // Due between the third attempt and the fourth, which no sweep ran before: the claim hands the
    // fourth over as expired, so it is not made, and the delivery fails unannounced.
    await expirePayloadAt(messageId, clock.now() + 2.5 * 3_600_000);
    await deliverAll({ maxAttempts: 100 });
    expect(await events()).toEqual([]);
    expect(await outcome(messageId)).toEqual([{ state: 'failed', last_error: 'payload expired', made: 3 }]);
  });

  it('announces a delivery recovered when it gets through after it was announced failing', async () => {
    const { appId, endpointId, messageId } = await oneMessage('flaky/5/b');
    await deliverAll({ maxAttempts: 100 });
    const all = await events();
    expect(all.map((e) => e.type)).toEqual([FAILING, RECOVERED]);
    const { rows } = await t.db.query<{ id: string; started_at: Date }>(
      'select id, started_at from courier_attempts where message_id = $1 and number = 6',
      [messageId],
    );
    const svixData: MessageAttemptRecoveredEventData = {
      appId,
      appUid: null,
      endpointId,
      msgId: messageId,
      msgEventId: 'evt-flaky/5/b',
      lastAttempt: { id: rows[0]!.id, responseStatusCode: 200, timestamp: rows[0]!.started_at },
    };
    expect(all[1]!.data).toEqual({
      ...svixData,
      lastAttempt: { ...svixData.lastAttempt, timestamp: rows[0]!.started_at.toISOString() },
      endpointUid: null,
      attempts: 6,
    });
  });

  it('counts from a replay\'s fresh budget: a dead letter replayed and delivered at once is not "recovered"', async () => {
    const { endpointId } = await oneMessage('flaky/5/c');
    await deliverAll({ maxAttempts: 5 });
    expect((await events()).map((e) => e.type)).toEqual([FAILING, EXHAUSTED]);
    expect(await replayDeadLetters(t.db, { endpointId }, clock.now())).toMatchObject({ replayed: 1 });
    await deliverAll({ maxAttempts: 5 });
    expect((await events()).map((e) => e.type)).toEqual([FAILING, EXHAUSTED]);
    const { rows } = await t.db.query<{ number: number; decision: string }>(
      'select number, decision from courier_attempts order by started_at desc limit 1',
    );
    expect(rows).toEqual([{ number: 1, decision: 'delivered' }]);
  });

  it.each([
    ['a dead letter', (c: Completion): Completion => c],
    [
      'a fourth failure',
      (c: Completion): Completion => ({
        ...c,
        state: 'pending',
        attempts: 4,
        nextAttemptAt: clock.now() + 60_000,
        attempt: { ...c.attempt, number: 4, statusCode: 503, decision: 'retry' },
      }),
    ],
  ])(
    'announces %s once when its completion is written again (a commit that took effect, then failed to answer)',
    async (_name, as) => {
      const completion = as(await leasedTo('w', await oneMessage(400)));
      await completeAsWorker('w', completion);
      // Claimed again by the same worker meanwhile: the lease is its own again, the attempt written.
      await t.db.query(`update courier_deliveries set lease_owner = 'w', lease_expires_at = $1`, [
        new Date(clock.now() + 60_000),
      ]);
      await completeAsWorker('w', { ...completion, rewrite: true });
      expect(await events()).toHaveLength(1);
      const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from courier_attempts');
      expect(rows[0]!.n).toBe(1);
    },
  );

  /** The delivery of this message, leased to `owner`, and the completion that dead-letters it. */
  async function leasedTo(owner: string, { messageId }: { messageId: string }) {
    const { rows } = await t.db.query<{ id: string }>(
      `update courier_deliveries set lease_owner = $2, lease_expires_at = $3 where message_id = $1 returning id`,
      [messageId, owner, new Date(clock.now() + 60_000)],
    );
    const done = deliveredCompletion(Number(rows[0]!.id), 1, clock.now());
    const failed: Completion = {
      ...done,
      messageId,
      state: 'failed',
      attempt: { ...done.attempt, statusCode: 400, decision: 'failed' },
    };
    return failed;
  }

  /** What the worker does with a batch holding an event (completion-writer.ts). */
  const completeAsWorker = (owner: string, c: Completion) =>
    t.db.transaction(async (tx) => {
      await reportAttemptEvents(tx, owner, [c], clock.now(), false, silentLogger);
      await complete(tx, owner, clock.now(), [c], 100);
    });

  it('queues the event for the operator webhook with the dead letter, but not one about the operator endpoint', async () => {
    const { appId: operatorAppId } = await ensureOperatorEndpoint(t.db, `${receiver.url}/410`, clock);
    const relay = new OperatorRelay(t.db, clock, silentLogger);
    const { messageId } = await oneMessage(422);
    await deliverAll({ relay });
    // The customer's dead letter was queued for the operator, whose endpoint answers 410: that
    // delivery is dead-lettered too, recorded, and not announced to the operator endpoint itself.
    const all = await events();
    expect(all.map((e) => [e.appId === operatorAppId, e.data.msgId === messageId])).toEqual([
      [false, true],
      [true, false],
    ]);
    const { rows } = await t.db.query<{ event_type: string; event_id: string }>(
      'select event_type, event_id from courier_messages where app_id = $1',
      [operatorAppId],
    );
    expect(rows).toEqual([{ event_type: EXHAUSTED, event_id: all[0]!.id }]);
  });

  it('announces every dead letter of a batch, and the relay queues them all for the operator', async () => {
    const { appId: operatorAppId } = await ensureOperatorEndpoint(t.db, `${receiver.url}/200`, clock);
    const app = await makeApp(t.db, clock.now());
    await makeEndpoint(t.db, app.id, clock.now(), { url: `${receiver.url}/403`, maxInFlight: 100 });
    for (let i = 0; i < 120; i++) await publishJson(t.db, app.id, clock.now(), { i });
    const relay = new OperatorRelay(t.db, clock, silentLogger);
    const { worker, sender } = virtualWorker(t.db, { clock, operatorRelay: relay, pauseAfter: 1_000 });
    const sent = await worker.runOnce(200);
    expect(sent).toBe(100); // the endpoint's cap
    await worker.stop(); // waits for the relay
    await sender.close();
    const all = await events();
    expect(all).toHaveLength(sent);
    expect(new Set(all.map((e) => e.data.msgId)).size).toBe(sent);
    const { rows } = await t.db.query<{ n: number }>(
      'select count(distinct event_id)::int as n from courier_messages where app_id = $1',
      [operatorAppId],
    );
    expect(rows[0]!.n).toBe(sent);
  });

  it('keeps the dead letter, and logs, when its event cannot be recorded', async () => {
    const errors: string[] = [];
    const logger: Logger = {
      ...silentLogger,
      error: (_o: unknown, msg?: string) => void errors.push(msg ?? ''),
    };
    const { messageId } = await oneMessage(410);
    // The events table unusable for a moment (an operator's botched manual change, say).
    await t.db.query('alter table courier_operational_events rename to courier_operational_events_away');
    try {
      await deliverAll({ logger });
    } finally {
      await t.db.query('alter table courier_operational_events_away rename to courier_operational_events');
    }
    expect(errors).toEqual([`could not record ${EXHAUSTED}; the deliveries go on without it`]);
    expect(await events()).toEqual([]);
    const { rows } = await t.db.query<{ state: string }>(
      'select state from courier_deliveries where message_id = $1',
      [messageId],
    );
    expect(rows).toEqual([{ state: 'failed' }]);
  });
});
