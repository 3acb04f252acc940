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
