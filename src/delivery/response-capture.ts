/**
 * Keeps what the attempt log shows of a response: the first bytes of its body and a bounded copy of
 * its headers. Nothing here grows with what the receiver sends.
 */
import { StringDecoder } from 'node:string_decoder';

/** Collects at most `limit` body bytes; `push` reports when the limit is reached. */
export class BodyCapture {
  #chunks: Buffer[] = [];
  #size = 0;
  #truncated = false;

  constructor(private readonly limit: number) {}

  /** @returns true once the body has proved longer than the limit: the caller should stop reading. */
  push(chunk: Buffer): boolean {
    const room = this.limit - this.#size;
    if (chunk.length > room) {
      if (room > 0) this.#chunks.push(chunk.subarray(0, room));
      this.#size = this.limit;
      this.#truncated = true;
      return true;
    }
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    return false;
  }

  get truncated(): boolean {
    return this.#truncated;
  }

  /** UTF-8 with replacement characters; a character cut at the limit is dropped rather than mangled. */
  text(): string {
    if (this.#size === 0) return '';
    const bytes = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks, this.#size);
    return this.#truncated ? new StringDecoder('utf8').write(bytes) : bytes.toString('utf8');
  }
}

/**
 * Flattens headers (repeated ones joined with ', ') into at most `limitBytes` of names and values,
 * for the attempt log. Headers that do not fit are skipped rather than cutting the loop short, so
 * short ones after one huge header are still shown.
 */
export function captureHeaders(
  headers: Readonly<Record<string, string | readonly string[] | undefined>>,
  limitBytes: number,
): Record<string, string> {
  const out: Record<string, string> = {};
  let used = 0;
  for (const name in headers) {
    const raw = headers[name];
    if (raw === undefined) continue;
    const value = typeof raw === 'string' ? raw : raw.join(', ');
    const cost = name.length + value.length + 4; // ": " and CRLF, as on the wire
    if (used + cost > limitBytes) continue;
    used += cost;
    out[name] = value;
  }
  return out;
}
