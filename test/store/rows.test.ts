import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromEscapedBytes } from '../../src/store/rows.ts';

/** PostgreSQL's encode(bytes, 'escape') (esc_encode in src/backend/utils/adt/encode.c). */
function pgEscape(bytes: Uint8Array): string {
  let text = '';
  for (const b of bytes) {
    if (b === 0 || b >= 0x80) text += `\\${b.toString(8).padStart(3, '0')}`;
    else if (b === 0x5c) text += '\\\\';
    else text += String.fromCharCode(b);
  }
  return text;
}

describe('fromEscapedBytes', () => {
  it('takes ASCII without backslashes as it is', () => {
    const json = '{"type":"invoice.paid","lines":["a", "b"],"n":1}\n\t';
    expect(fromEscapedBytes(json)).toEqual(Buffer.from(json, 'latin1'));
    expect(fromEscapedBytes('')).toEqual(Buffer.alloc(0));
  });

  it('decodes doubled backslashes and octal escapes, wherever they stand', () => {
    expect(fromEscapedBytes('\\\\')).toEqual(Buffer.from([0x5c]));
    expect(fromEscapedBytes('\\000a\\377')).toEqual(Buffer.from([0, 0x61, 0xff]));
    expect(fromEscapedBytes('caf\\303\\251 \\\\n')).toEqual(Buffer.from('café \\n'));
    expect(fromEscapedBytes(pgEscape(Buffer.from('漢字 {"k":"\\u0000"}')))).toEqual(
      Buffer.from('漢字 {"k":"\\u0000"}'),
    );
  });

  it('gives back exactly the bytes PostgreSQL escaped, for any bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        expect(fromEscapedBytes(pgEscape(bytes))).toEqual(Buffer.from(bytes));
      }),
      { numRuns: 500 },
    );
  });
});
