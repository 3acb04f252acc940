/** Conversions between database values and Courier's plain values (ms instants, Buffers). */

export function toDate(ms: number): Date {
  return new Date(ms);
}

export function toMs(value: Date | string | null | undefined): number | null {
  if (value === null || value === undefined) return null;
  return value instanceof Date ? value.getTime() : Date.parse(value);
}

/** pg gives bytea as Buffer, PGlite as Uint8Array: view both as Buffer without copying. */
export function toBuffer(value: Uint8Array): Buffer {
  return Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

/**
 * Bytes from encode(bytea, 'escape'): every byte stands for itself except NUL and bytes with the
 * high bit set (a backslash and three octal digits) and the backslash (doubled).
 */
export function fromEscapedBytes(text: string): Buffer {
  let i = text.indexOf('\\');
  if (i === -1) return Buffer.from(text, 'latin1');
  // Decoded in place: the bytes never outrun the text they come from.
  const bytes = Buffer.from(text, 'latin1');
  let n = i;
  while (i < bytes.length) {
    if (bytes[i] !== 0x5c) {
      bytes[n++] = bytes[i++]!;
    } else if (bytes[i + 1] === 0x5c) {
      bytes[n++] = 0x5c;
      i += 2;
    } else {
      bytes[n++] = ((bytes[i + 1]! - 48) << 6) | ((bytes[i + 2]! - 48) << 3) | (bytes[i + 3]! - 48);
      i += 4;
    }
  }
  return bytes.subarray(0, n);
}
