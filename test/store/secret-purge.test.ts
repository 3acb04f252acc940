import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { silentLogger } from '../../src/logger.ts';
import { generateSecret } from '../../src/signing/index.ts';
import { purgeExpiredSecrets, SECRET_PURGE_MARGIN_MS } from '../../src/store/queries/secret-purge.ts';
import { deleteApplication } from '../../src/store/repos/applications.ts';
import { deleteEndpoint, rotateSecret } from '../../src/store/repos/endpoints.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { virtualWorker } from '../support/engine.ts';
import { makeApp, makeEndpoint, signingSecrets } from '../support/fixtures.ts';
import { holdOpen } from '../support/transactions.ts';

const HOUR = 3_600_000;
const TO = { url: 'http://127.0.0.1:1/' };

describe.each(BACKENDS)('deleting expired signing secrets on %s', (backend) => {
  let t: TestDatabase;
  let clock: ManualClock;

  beforeEach(async () => {
    t = await openTestDatabase(backend);
    clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
  });
  afterEach(() => t.drop());

  const stored = async (endpointId: string) =>
    (
      await t.db.query<{ n: number }>(
        'select count(*)::int as n from courier_endpoint_secrets where endpoint_id = $1',
        [endpointId],
      )
    ).rows[0]!.n;
  const version = async (endpointId: string) =>
    (
      await t.db.query<{ v: string }>(
        'select config_version::text as v from courier_endpoints where id = $1',
        [endpointId],
      )
    ).rows[0]!.v;

  it('deletes a rotated-out secret an hour past its grace period, and nothing that still signs', async () => {
    const app = await makeApp(t.db, clock.now());
    const [first, second] = [generateSecret(), generateSecret()];
    const ep = await makeEndpoint(t.db, app.id, clock.now(), TO, first);
    await t.db.transaction((tx) => rotateSecret(tx, ep.id, second, 60_000, clock.now()));
    const expiry = clock.now() + 60_000;

    expect(await purgeExpiredSecrets(t.db, expiry + SECRET_PURGE_MARGIN_MS - 1, 100)).toBe(0);
    expect(await stored(ep.id)).toBe(2);
    const before = await version(ep.id);
    expect(await purgeExpiredSecrets(t.db, expiry + SECRET_PURGE_MARGIN_MS, 100)).toBe(1);
    expect(await signingSecrets(t.db, ep.id, expiry + HOUR)).toEqual([second]);
    // What signs did not change: the endpoint's cached configuration stays valid.
    expect(await version(ep.id)).toBe(before);
    // The current secret is never due, however late.
    expect(await purgeExpiredSecrets(t.db, expiry + 1000 * HOUR, 100)).toBe(0);
    expect(await stored(ep.id)).toBe(1);
  });

  it("expires a deleted endpoint's secrets at its deletion, and deletes them an hour later", async () => {
    const app = await makeApp(t.db, clock.now());
    const kept = await makeEndpoint(t.db, app.id, clock.now(), TO);
    const gone = await makeEndpoint(t.db, app.id, clock.now(), TO);
    await t.db.transaction((tx) => rotateSecret(tx, gone.id, generateSecret(), 24 * HOUR, clock.now()));
    const other = await makeApp(t.db, clock.now());
    const [a, b] = [
      await makeEndpoint(t.db, other.id, clock.now(), TO),
      await makeEndpoint(t.db, other.id, clock.now(), TO),
    ];

    await t.db.transaction((tx) => deleteEndpoint(tx, gone.id, clock.now()));
    await t.db.transaction((tx) => deleteApplication(tx, other.id, clock.now()));
    for (const ep of [gone, a, b]) expect(await signingSecrets(t.db, ep.id, clock.now())).toEqual([]);
    expect(await signingSecrets(t.db, kept.id, clock.now())).toHaveLength(1);

    expect(await purgeExpiredSecrets(t.db, clock.now() + SECRET_PURGE_MARGIN_MS, 2)).toBe(2);
    expect(await purgeExpiredSecrets(t.db, clock.now() + SECRET_PURGE_MARGIN_MS, 2)).toBe(2);
    expect(await purgeExpiredSecrets(t.db, clock.now() + SECRET_PURGE_MARGIN_MS, 2)).toBe(0);
    for (const ep of [gone, a, b]) expect(await stored(ep.id)).toBe(0);
    expect(await stored(kept.id)).toBe(1);
  });

  it('is one of the worker’s chores', async () => {
    const infos: string[] = [];
    const logger = { ...silentLogger, info: (_o: object, msg?: string) => void infos.push(msg ?? '') };
    const app = await makeApp(t.db, clock.now());
    const ep = await makeEndpoint(t.db, app.id, clock.now(), TO);
    await t.db.transaction((tx) => deleteEndpoint(tx, ep.id, clock.now()));
    clock.advance(SECRET_PURGE_MARGIN_MS);
    const { worker } = virtualWorker(t.db, { clock, logger, reapIntervalMs: 10 });
    await worker.start();
    try {
      await expect.poll(() => stored(ep.id)).toBe(0);
    } finally {
      await worker.stop();
    }
    expect(infos).toContain('deleted signing secrets past their expiry');
  });

  it.runIf(backend === 'pg')('leaves a secret another transaction holds for the next time', async () => {
    const app = await makeApp(t.db, clock.now());
    const ep = await makeEndpoint(t.db, app.id, clock.now(), TO);
    await t.db.transaction((tx) => deleteEndpoint(tx, ep.id, clock.now()));
    // As a reseal at start holds the rows it seals again.
    const held = await holdOpen(t.db, (tx) =>
      tx.query('select 1 from courier_endpoint_secrets where endpoint_id = $1 for update', [ep.id]),
    );
    try {
      expect(await purgeExpiredSecrets(t.db, clock.now() + SECRET_PURGE_MARGIN_MS, 100)).toBe(0);
    } finally {
      await held.commit();
    }
    expect(await purgeExpiredSecrets(t.db, clock.now() + SECRET_PURGE_MARGIN_MS, 100)).toBe(1);
  });
});
