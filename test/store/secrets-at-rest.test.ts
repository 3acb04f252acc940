import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateSecret, verify } from '../../src/signing/index.ts';
import { PgDatabase } from '../../src/store/pg.ts';
import { activeSecrets, rotateSecret } from '../../src/store/repos/endpoints.ts';
import { enableSecretsAtRest } from '../../src/store/secrets-at-rest.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { BACKENDS, openTestDatabase, TEST_DATABASE_URL, type TestDatabase } from '../support/databases.ts';
import { virtualWorker } from '../support/engine.ts';
import { makeApp, makeEndpoint, publishJson } from '../support/fixtures.ts';

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
    const { clock, worker, sender } = virtualWorker(t.db);
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
    expect(await activeSecrets(t.db, ep.id, clock.now())).toEqual([rotated, secret]);

    await publishJson(t.db, app.id, clock.now(), { sealed: true });
    expect(await worker.runOnce()).toBe(1);
    await sender.close();
    const [request] = receiver.requests;
    // Both the new and the old (in its grace period) secret sign the request.
    for (const key of [rotated, secret]) {
      verify(request!.body, request!.headers as Record<string, string>, key, { now: () => clock.now() });
    }
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
        expect(await activeSecrets(other, ep.id, Date.now())).toEqual([secret]);
      } finally {
        await other.close();
      }
    },
  );
});
