import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { silentLogger } from '../../src/logger.ts';
import { generateSecret } from '../../src/signing/index.ts';
import { SecretBox } from '../../src/signing/secret-box.ts';
import { PgDatabase } from '../../src/store/pg.ts';
import { deleteEndpoint, rotateSecret } from '../../src/store/repos/endpoints.ts';
import { enableSecretsAtRest, SecretsKeyMismatch } from '../../src/store/secrets-at-rest.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { BACKENDS, openTestDatabase, TEST_DATABASE_URL, type TestDatabase } from '../support/databases.ts';
import { virtualWorker } from '../support/engine.ts';
import { makeApp, makeEndpoint, publishJson, signingSecrets } from '../support/fixtures.ts';

describe.each(BACKENDS)('signing secrets encrypted at rest on %s', (backend) => {
  let t: TestDatabase;
  let receiver: Receiver;

  beforeEach(async () => {
    t = await openTestDatabase(backend);
    await enableSecretsAtRest(t.db);
    receiver = await startReceiver((_req, res) => res.end());
  });
  afterEach(async () => {
    await receiver.close();
    await t.drop();
  });

  it('stores secrets sealed, reads them back, and signs with them', async () => {
    // The reference verifier checks webhook-timestamp against the real clock.
    const { clock, worker, sender } = virtualWorker(t.db, { clock: new ManualClock(Date.now()) });
    const secret = generateSecret();
    const app = await makeApp(t.db, clock.now());
    const ep = await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url }, secret);
    const rotated = generateSecret();
    await t.db.transaction((tx) => rotateSecret(tx, ep.id, rotated, 60_000, clock.now()));

    const { rows } = await t.db.query<{ key: string }>('select key from courier_endpoint_secrets');
    expect(rows).toHaveLength(2);
    for (const { key } of rows) {
      expect(key).toMatch(/^enc:v1:/);
      expect(key).not.toContain(secret.slice(6));
      expect(key).not.toContain(rotated.slice(6));
    }
    expect(await signingSecrets(t.db, ep.id, clock.now())).toEqual([rotated, secret]);

    await publishJson(t.db, app.id, clock.now(), { sealed: true });
    expect(await worker.runOnce()).toBe(1);
    await sender.close();
    const [request] = receiver.requests;
    // Both the new and the old (in its grace period) secret sign the request, as the
    // standardwebhooks package (not Courier's own verifier) sees it; an unrelated one does not.
    const body = request!.body.toString();
    const headers = request!.headers as Record<string, string>;
    for (const key of [rotated, secret])
      expect(new Webhook(key).verify(body, headers)).toEqual({ sealed: true });
    expect(() => new Webhook(generateSecret()).verify(body, headers)).toThrow('No matching signature found');
  });

  it('holds back only the endpoint whose secret cannot be opened, not the rest of the claim', async () => {
    const { clock, worker, sender } = virtualWorker(t.db);
    const app = await makeApp(t.db, clock.now());
    const broken = await makeEndpoint(t.db, app.id, clock.now(), { url: `${receiver.url}/broken` });
    await makeEndpoint(t.db, app.id, clock.now(), { url: `${receiver.url}/fine` });
    // Sealed by a process with a key this one does not have.
    const foreign = new SecretBox(randomBytes(32)).seal(generateSecret());
    await t.db.query('update courier_endpoint_secrets set key = $1 where endpoint_id = $2', [
      foreign,
      broken.id,
    ]);
    await publishJson(t.db, app.id, clock.now(), { n: 1 });
    const states = async () =>
      (
        await t.db.query<{ endpoint_id: string; state: string; attempts: number }>(
          'select endpoint_id, state, attempts from courier_delivery_states order by endpoint_id',
        )
      ).rows.map((r) =>
        r.endpoint_id === broken.id ? `broken ${r.state} ${r.attempts}` : `fine ${r.state}`,
      );
    expect(await worker.runOnce()).toBe(1);
    expect(receiver.requests.map((r) => r.url)).toEqual(['/fine']);
    expect((await states()).sort()).toEqual(['broken pending 0', 'fine delivered']);
    // Given back due at once the first time; failing again, due a minute later: no hot loop.
    expect(await worker.runOnce()).toBe(0);
    expect(await worker.runOnce()).toBe(0);
    const { rows } = await t.db.query<{ due: Date }>(
      'select next_attempt_at as due from courier_deliveries where endpoint_id = $1',
      [broken.id],
    );
    expect(rows[0]!.due.getTime()).toBe(clock.now() + 60_000);
    await sender.close();
  });

  it('signs with the readable secrets when an earlier one, in its grace period, cannot be opened', async () => {
    const warnings: string[] = [];
    const logger = { ...silentLogger, warn: (_o: object, msg?: string) => void warnings.push(msg ?? '') };
    // The reference verifier checks webhook-timestamp against the real clock.
    const { clock, worker, sender } = virtualWorker(t.db, { clock: new ManualClock(Date.now()), logger });
    const app = await makeApp(t.db, clock.now());
    const [first, second, third] = [generateSecret(), generateSecret(), generateSecret()];
    const ep = await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url }, first);
    // Two rotations in the same millisecond: the expiries must stay with their own secrets.
    await t.db.transaction((tx) => rotateSecret(tx, ep.id, second, 60_000, clock.now()));
    await t.db.transaction((tx) => rotateSecret(tx, ep.id, third, 120_000, clock.now()));
    // The middle one sealed again by a process with a key this one does not have.
    await t.db.query(
      `update courier_endpoint_secrets set key = $1 where endpoint_id = $2 and expires_at = $3`,
      [new SecretBox(randomBytes(32)).seal(second), ep.id, new Date(clock.now() + 120_000)],
    );
    expect(await signingSecrets(t.db, ep.id, clock.now())).toEqual([third, first]);
    expect(await signingSecrets(t.db, ep.id, clock.now() + 60_001)).toEqual([third]);

    await publishJson(t.db, app.id, clock.now(), { n: 1 });
    expect(await worker.runOnce()).toBe(1);
    await sender.close();
    const [request] = receiver.requests;
    const body = request!.body.toString();
    const headers = request!.headers as Record<string, string>;
    for (const key of [third, first]) expect(new Webhook(key).verify(body, headers)).toEqual({ n: 1 });
    expect(() => new Webhook(second).verify(body, headers)).toThrow('No matching signature found');
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(warnings).toEqual(['signing without 1 earlier secrets it cannot open']);
    // Warned once per configuration, not at every claim.
    await publishJson(t.db, app.id, clock.now(), { n: 2 });
    expect(await virtualWorker(t.db, { clock, logger }).worker.runOnce()).toBe(1);
    expect(warnings).toHaveLength(1);
  });

  it('moves the secrets from the generated key to COURIER_SECRETS_KEY, then refuses any other key', async () => {
    const now = Date.now();
    const app = await makeApp(t.db, now);
    const secret = generateSecret();
    const ep = await makeEndpoint(t.db, app.id, now, { url: receiver.url }, secret);
    const before = await t.db.query<{ key: string }>('select key from courier_endpoint_secrets');

    const key = randomBytes(32).toString('base64');
    expect(await enableSecretsAtRest(t.db, key)).toEqual({ resealed: 1 });
    const after = await t.db.query<{ key: string }>('select key from courier_endpoint_secrets');
    expect(after.rows[0]!.key).toMatch(/^enc:v1:/);
    expect(after.rows[0]!.key).not.toBe(before.rows[0]!.key);
    expect(await signingSecrets(t.db, ep.id, now)).toEqual([secret]);
    // Retired, not deleted: processes still running with it go on sealing with it.
    const generated = await t.db.query(`select 1 from courier_settings where name = 'secrets_key'`);
    expect(generated.rows).toHaveLength(1);

    // Started again with the same key: nothing to move.
    expect(await enableSecretsAtRest(t.db, key)).toEqual({ resealed: 0 });
    await expect(enableSecretsAtRest(t.db, randomBytes(32).toString('base64'))).rejects.toThrow(
      SecretsKeyMismatch,
    );
    await expect(enableSecretsAtRest(t.db)).rejects.toThrow(/another key \(a COURIER_SECRETS_KEY\): set it/);
    // Refused starts change nothing: the right key still opens every secret.
    await enableSecretsAtRest(t.db, key);
    expect(await signingSecrets(t.db, ep.id, now)).toEqual([secret]);
  });

  it('changes a configured key for another with COURIER_SECRETS_KEY_PREVIOUS', async () => {
    const now = Date.now();
    const app = await makeApp(t.db, now);
    const secret = generateSecret();
    const first = randomBytes(32).toString('base64');
    const second = randomBytes(32).toString('base64');
    await enableSecretsAtRest(t.db, first);
    const ep = await makeEndpoint(t.db, app.id, now, { url: receiver.url }, secret);
    const sealedFirst = (await t.db.query<{ key: string }>('select key from courier_endpoint_secrets'))
      .rows[0]!.key;

    // The new key alone cannot open what the first sealed, and says how to change keys.
    await expect(enableSecretsAtRest(t.db, second)).rejects.toThrow(/COURIER_SECRETS_KEY_PREVIOUS/);
    expect(await enableSecretsAtRest(t.db, second, first)).toEqual({ resealed: 1 });
    const sealedSecond = (await t.db.query<{ key: string }>('select key from courier_endpoint_secrets'))
      .rows[0]!.key;
    expect(new SecretBox(Buffer.from(second, 'base64')).open(sealedSecond)).toBe(secret);
    // A process still on the first key sealed this meanwhile: the previous key opens it, and the
    // next start seals it again.
    await t.db.query('update courier_endpoint_secrets set key = $1', [sealedFirst]);
    expect(await signingSecrets(t.db, ep.id, now)).toEqual([secret]);
    expect(await enableSecretsAtRest(t.db, second, first)).toEqual({ resealed: 1 });

    // Every process on the new key: the previous one is dropped, and the first is refused.
    expect(await enableSecretsAtRest(t.db, second)).toEqual({ resealed: 0 });
    expect(await signingSecrets(t.db, ep.id, now)).toEqual([secret]);
    await expect(enableSecretsAtRest(t.db, first)).rejects.toThrow(SecretsKeyMismatch);
  });

  it('refuses a start whose key cannot open a current secret, sealed by a process on a key since dropped', async () => {
    const now = Date.now();
    const [first, second] = [randomBytes(32).toString('base64'), randomBytes(32).toString('base64')];
    await enableSecretsAtRest(t.db, first);
    const app = await makeApp(t.db, now);
    const current = await makeEndpoint(t.db, app.id, now, { url: receiver.url });
    const rotated = await makeEndpoint(t.db, app.id, now, { url: receiver.url });
    const gone = await makeEndpoint(t.db, app.id, now, { url: receiver.url });
    expect(await enableSecretsAtRest(t.db, second, first)).toEqual({ resealed: 3 });
    // Sealed meanwhile by a process still on the first key: an earlier secret, a deleted endpoint's
    // (neither stops a delivery), and then a current one.
    const sealedFirst = new SecretBox(Buffer.from(first, 'base64')).seal(generateSecret());
    await t.db.transaction((tx) => rotateSecret(tx, rotated.id, generateSecret(), 60_000, now));
    await t.db.query(
      'update courier_endpoint_secrets set key = $1 where endpoint_id = $2 and expires_at is not null',
      [sealedFirst, rotated.id],
    );
    await t.db.query('update courier_endpoint_secrets set key = $1 where endpoint_id = $2', [
      sealedFirst,
      gone.id,
    ]);
    await t.db.transaction((tx) => deleteEndpoint(tx, gone.id, now));
    expect(await enableSecretsAtRest(t.db, second)).toEqual({ resealed: 0 });
    await t.db.query('update courier_endpoint_secrets set key = $1 where endpoint_id = $2', [
      sealedFirst,
      current.id,
    ]);
    await expect(enableSecretsAtRest(t.db, second)).rejects.toThrow(/include 1 sealed with another key/);
    // With the key it was sealed with as the previous one, it is sealed again.
    expect(await enableSecretsAtRest(t.db, second, first)).toEqual({ resealed: 3 });
    expect(await enableSecretsAtRest(t.db, second)).toEqual({ resealed: 0 });
  });

  it('refuses another key once one is chosen, even before any endpoint exists', async () => {
    const key = randomBytes(32).toString('base64');
    const fresh = await openTestDatabase(backend);
    try {
      await enableSecretsAtRest(fresh.db, key);
      await expect(enableSecretsAtRest(fresh.db, randomBytes(32).toString('base64'))).rejects.toThrow(
        /cannot open the signing secrets stored in this database/,
      );
      await expect(enableSecretsAtRest(fresh.db)).rejects.toThrow(SecretsKeyMismatch);
    } finally {
      await fresh.drop();
    }
  });

  it('checks a key against a stored secret where no key check was kept (an older release)', async () => {
    const key = randomBytes(32).toString('base64');
    await enableSecretsAtRest(t.db, key);
    const now = Date.now();
    const app = await makeApp(t.db, now);
    const secret = generateSecret();
    const ep = await makeEndpoint(t.db, app.id, now, { url: receiver.url }, secret);
    await t.db.query(`delete from courier_settings where name = 'secrets_key_check'`);
    await expect(enableSecretsAtRest(t.db, randomBytes(32).toString('base64'))).rejects.toThrow(
      SecretsKeyMismatch,
    );
    await expect(enableSecretsAtRest(t.db)).rejects.toThrow(SecretsKeyMismatch);
    // The key they were sealed with opens them, and the check is written again.
    expect(await enableSecretsAtRest(t.db, key)).toEqual({ resealed: 0 });
    expect(await signingSecrets(t.db, ep.id, now)).toEqual([secret]);
    const check = await t.db.query(`select 1 from courier_settings where name = 'secrets_key_check'`);
    expect(check.rows).toHaveLength(1);
  });

  it.runIf(backend === 'pg')(
    'loses no secret a process still on the generated key seals after the takeover',
    async () => {
      const now = Date.now();
      const app = await makeApp(t.db, now);
      // Running since before the takeover, with the generated key.
      const old = new PgDatabase({ connectionString: TEST_DATABASE_URL, schema: t.schema });
      try {
        await enableSecretsAtRest(old);
        const key = randomBytes(32).toString('base64');
        await enableSecretsAtRest(t.db, key);
        const late = generateSecret();
        const ep = await makeEndpoint(old, app.id, now, { url: receiver.url }, late);
        // The new process opens it with the retired key, and its next start seals it again.
        expect(await signingSecrets(t.db, ep.id, now)).toEqual([late]);
        expect(await enableSecretsAtRest(t.db, key)).toEqual({ resealed: 1 });
        const { rows } = await t.db.query(
          `delete from courier_settings where name = 'secrets_key' returning 1`,
        );
        expect(rows).toHaveLength(1);
        // With the generated key deleted, the configured one alone opens every secret.
        await enableSecretsAtRest(t.db, key);
        expect(await signingSecrets(t.db, ep.id, now)).toEqual([late]);
      } finally {
        await old.close();
      }
    },
  );

  it('takes over secrets sealed with both keys, where no key check was kept', async () => {
    const key = randomBytes(32).toString('base64');
    const now = Date.now();
    const app = await makeApp(t.db, now);
    const [first, second] = [generateSecret(), generateSecret()];
    const ep1 = await makeEndpoint(t.db, app.id, now, { url: receiver.url }, first);
    const ep2 = await makeEndpoint(t.db, app.id, now, { url: receiver.url }, second);
    // As an older release could leave it: the second sealed with the configured key (its process
    // had it), the first with the generated one (a worker started without it), and no check.
    await t.db.query('update courier_endpoint_secrets set key = $1 where endpoint_id = $2', [
      new SecretBox(Buffer.from(key, 'base64')).seal(second),
      ep2.id,
    ]);
    await t.db.query(`delete from courier_settings where name = 'secrets_key_check'`);
    await expect(enableSecretsAtRest(t.db)).rejects.toThrow(/include 1 sealed with another key/);
    expect(await enableSecretsAtRest(t.db, key)).toEqual({ resealed: 1 });
    expect(await signingSecrets(t.db, ep1.id, now)).toEqual([first]);
    expect(await signingSecrets(t.db, ep2.id, now)).toEqual([second]);
  });

  it('seals at start a secret stored before encryption at rest existed', async () => {
    const now = Date.now();
    const app = await makeApp(t.db, now);
    const secret = generateSecret();
    const ep = await makeEndpoint(t.db, app.id, now, { url: receiver.url }, secret);
    // As a release without encryption at rest stored it, with no key check yet.
    await t.db.query('update courier_endpoint_secrets set key = $1 where endpoint_id = $2', [secret, ep.id]);
    await t.db.query(`delete from courier_settings where name = 'secrets_key_check'`);
    expect(await enableSecretsAtRest(t.db)).toEqual({ resealed: 1 });
    const { rows } = await t.db.query<{ key: string }>('select key from courier_endpoint_secrets');
    expect(rows[0]!.key).toMatch(/^enc:v1:/);
    expect(await signingSecrets(t.db, ep.id, now)).toEqual([secret]);
  });

  it.runIf(backend === 'pg')(
    'shares one generated key between the processes of an installation',
    async () => {
      const app = await makeApp(t.db, Date.now());
      const secret = generateSecret();
      const ep = await makeEndpoint(t.db, app.id, Date.now(), { url: receiver.url }, secret);
      // A second process: its own pool on the same schema, loading the key the first one made.
      const other = new PgDatabase({ connectionString: TEST_DATABASE_URL, schema: t.schema });
      try {
        await enableSecretsAtRest(other);
        expect(await signingSecrets(other, ep.id, Date.now())).toEqual([secret]);
      } finally {
        await other.close();
      }
    },
  );
});
