import { describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.ts';
import { hasIdPrefix, ID_PREFIXES, idsBefore, idTime, isValidUid, newId } from '../src/ids.ts';

// The id factory is shared by the whole module, so each test uses later instants than the previous.
const clock = new ManualClock(Date.UTC(2026, 0, 1));

describe('newId', () => {
  it('is the prefix, an underscore and a 26-character ULID', () => {
    for (const prefix of ID_PREFIXES) {
      const id = newId(prefix, clock.now());
      expect(id).toMatch(new RegExp(`^${prefix}_[0-9A-HJKMNP-TV-Z]{26}$`));
      expect(hasIdPrefix(id, prefix)).toBe(true);
    }
  });

  it('encodes the injected time, not the real one', () => {
    clock.advance(1000);
    const id = newId('msg', clock.now());
    expect(idTime(id)).toBe(clock.now());
    expect(id.slice(4, 14)).toBe('01KDVDNAZ8'); // 2026-01-01T00:00:01Z, Crockford base32
  });

  it('sorts across milliseconds', () => {
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) {
      clock.advance(1 + (i % 3));
      ids.push(newId('atmpt', clock.now()));
    }
    expect([...ids].sort()).toEqual(ids);
  });

  it('sorts in creation order within one millisecond', () => {
    clock.advance(1);
    const ids = Array.from({ length: 1000 }, () => newId('msg', clock.now()));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    expect(ids.every((id) => idTime(id) === clock.now())).toBe(true);
  });

  it('never sorts before an earlier id when the clock steps back', () => {
    clock.advance(10_000);
    const before = newId('ep', clock.now());
    const after = newId('ep', clock.now() - 5000);
    expect(after > before).toBe(true);
    expect(idTime(after)).toBe(clock.now());
  });

  it('refuses an instant that is not a positive integer of ms', () => {
    for (const now of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => newId('app', now)).toThrow(RangeError);
    }
  });
});

describe('hasIdPrefix', () => {
  it('matches the whole prefix only', () => {
    expect(hasIdPrefix('msg_01KDX2WZ78ABCDEFGHJKMNPQRS', 'msg')).toBe(true);
    expect(hasIdPrefix('msgep_01KDX2WZ78ABCDEFGHJKMNPQRS', 'msg')).toBe(false);
    expect(hasIdPrefix('msg', 'msg')).toBe(false);
    expect(hasIdPrefix('app_x', 'ep')).toBe(false);
  });
});

describe('isValidUid', () => {
  it.each(['a', 'azAZ09-_.', 'customer-42', 'App_1', 'apple_pie', 'ep', 'x'.repeat(256)])(
    'accepts %j',
    (uid) => {
      expect(isValidUid(uid)).toBe(true);
    },
  );

  it.each([
    '',
    'x'.repeat(257),
    'with space',
    'slash/no',
    'colon:no',
    'ünïcode',
    'line\nbreak',
    'app_24NVKcPqNLXKu3xQhJnw8fSumZK',
    'ep_x',
    'msg_',
    'atmpt_1',
    'evtype_a',
    '.', // clients resolve these path segments away
    '..',
  ])('rejects %j', (uid) => {
    expect(isValidUid(uid)).toBe(false);
  });
});

describe('idTime', () => {
  it('decodes the creation time', () => {
    clock.advance(1);
    expect(idTime(newId('evtype', clock.now()))).toBe(clock.now());
    expect(idTime('app_01ARZ3NDEKTSV4RRFFQ69G5FAV')).toBe(1469922850259); // the ULID spec's example
  });

  it.each([
    '',
    'msg',
    'msg_',
    '_01ARZ3NDEKTSV4RRFFQ69G5FAV',
    'msg_01ARZ3NDEK',
    'msg_01ARZ3NDEKTSV4RRFFQ69G5FAU!',
  ])('rejects %j', (id) => {
    expect(() => idTime(id)).toThrow(RangeError);
  });
});

describe('idsBefore', () => {
  it('bounds exactly the ids made before the instant', () => {
    clock.advance(10_000);
    const at = clock.now();
    const earlier = newId('msg', at - 1);
    const same = newId('msg', at);
    const later = newId('msg', at + 1);
    const bound = idsBefore('msg', at);
    expect(earlier < bound).toBe(true);
    expect(same < bound).toBe(false);
    expect(later < bound).toBe(false);
    expect(idsBefore('msg', 0)).toBe('msg_0000000000');
    expect(() => idsBefore('msg', -1)).toThrow(RangeError);
  });
});
