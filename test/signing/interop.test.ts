import { Webhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { describe, expect, it } from 'vitest';
import { verify, webhookHeaders } from '../../src/signing/index.ts';
import { generateSecret, parseSecret } from '../../src/signing/secrets.ts';

// Both reference verifiers check the timestamp against the real clock, so sign with the current time.
const nowSec = () => Math.floor(Date.now() / 1000);
const MSG_ID = 'msg_2mR7pXxBf3kQ0q9ZtUo4c1a8dE';

function headersFor(secrets: readonly string[], body: Buffer | string) {
  return webhookHeaders({ msgId: MSG_ID, timestampSec: nowSec(), body, secrets: secrets.map(parseSecret) });
}

const bodies: [string, Buffer | string][] = [
  ['ASCII JSON', '{"type":"invoice.paid","amount":4200}'],
  ['UTF-8 JSON string', '{"name":"Zoë Ångström","city":"東京","emoji":"🚀👩‍💻"}'],
  ['UTF-8 JSON bytes', Buffer.from('{"note":"naïve café — ½ ∑ 𝄞"}')],
  ['empty body', ''],
];

describe('standardwebhooks (independent verifier)', () => {
  it.each(bodies)('verifies our signature over %s', (_, body) => {
    const secret = generateSecret();
    const headers = headersFor([secret], body);
    expect(() => new Webhook(secret).verify(body, headers, { jsonParse: false })).not.toThrow();
  });

  it('takes the secret with or without the whsec_ prefix, or as raw bytes', () => {
    const secret = generateSecret();
    const body = '{"ok":true}';
    const headers = headersFor([secret], body);
    expect(new Webhook(secret).verify(body, headers)).toEqual({ ok: true });
    expect(new Webhook(secret.slice('whsec_'.length)).verify(body, headers)).toEqual({ ok: true });
    expect(new Webhook(parseSecret(secret), { format: 'raw' }).verify(body, headers)).toEqual({ ok: true });
  });

  it('verifies 24- and 64-byte secrets', () => {
    for (const length of [24, 64]) {
      const secret = `whsec_${Buffer.alloc(length, length).toString('base64')}`;
      const body = Buffer.from('{"size":1}');
      expect(new Webhook(secret).verify(body, headersFor([secret], body))).toEqual({ size: 1 });
    }
  });

  it('rotation: a receiver knowing only the old or only the new secret verifies', () => {
    const [previous, current, unrelated] = [generateSecret(), generateSecret(), generateSecret()];
    const body = Buffer.from('{"rotating":"✓"}');
    const headers = headersFor([current, previous], body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(() => new Webhook(previous).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(current).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(unrelated).verify(body, headers)).toThrow('No matching signature found');
  });

  it('rejects a tampered body', () => {
    const secret = generateSecret();
    const headers = headersFor([secret], '{"a":1}');
    expect(() => new Webhook(secret).verify('{"a":2}', headers)).toThrow('No matching signature found');
  });

  it('produces the signatures our verifier accepts', () => {
    const secret = generateSecret();
    const body = '{"from":"reference","text":"héllo"}';
    const timestampSec = nowSec();
    const signature = new Webhook(secret).sign(MSG_ID, new Date(timestampSec * 1000), body);
    const headers = {
      'webhook-id': MSG_ID,
      'webhook-timestamp': String(timestampSec),
      'webhook-signature': signature,
    };
    expect(headersFor([secret], body)['webhook-signature']).toBe(signature);
    verify(Buffer.from(body), headers, secret);
  });

  it('cannot verify non-UTF-8 bodies: it decodes Buffers to strings, so we sign exact bytes and verify them ourselves', () => {
    const secret = generateSecret();
    const body = Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x80, 0x22, 0x7d]);
    const headers = headersFor([secret], body);
    verify(body, headers, secret);
    expect(() => new Webhook(secret).verify(body, headers, { jsonParse: false })).toThrow(
      'No matching signature found',
    );
  });
});

describe('svix (official SDK verifier)', () => {
  it.each(bodies.filter(([, body]) => body !== ''))('verifies our webhook-* headers over %s', (_, body) => {
    const secret = generateSecret();
    const headers = headersFor([secret], body);
    expect(new SvixWebhook(secret).verify(body, headers)).toEqual(JSON.parse(body.toString()));
  });

  it('verifies the same values sent as svix-* headers', () => {
    const secret = generateSecret();
    const body = '{"branded":true}';
    const headers = headersFor([secret], body);
    const svixHeaders = {
      'svix-id': headers['webhook-id'],
      'svix-timestamp': headers['webhook-timestamp'],
      'svix-signature': headers['webhook-signature'],
    };
    expect(new SvixWebhook(secret).verify(body, svixHeaders)).toEqual({ branded: true });
  });

  it('rotation: a receiver knowing only the old or only the new secret verifies', () => {
    const [previous, current] = [generateSecret(), generateSecret()];
    const body = Buffer.from('{"rotating":true}');
    const headers = headersFor([current, previous], body);
    expect(new SvixWebhook(previous).verify(body, headers)).toEqual({ rotating: true });
    expect(new SvixWebhook(current.slice('whsec_'.length)).verify(body, headers)).toEqual({ rotating: true });
    expect(() => new SvixWebhook(generateSecret()).verify(body, headers)).toThrow();
  });
});
