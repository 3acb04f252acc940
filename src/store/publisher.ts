import { type Database, DatabaseUnavailableError, isDatabase, type Queryable } from './db.ts';
import {
  flushBarrier,
  type PublishInput,
  type PublishResult,
  publishBatch,
  publishUnflushed,
} from './queries/publish.ts';

/** Messages per statement; a batch this size writes in a few milliseconds. */
const MAX_BATCH = 100;
/**
 * Payload bytes per statement, past its first message: large payloads go in smaller batches, far
 * from PostgreSQL's 1 GB limit on a statement's parameter (COURIER_MAX_PAYLOAD may be 64 MiB).
 */
export const MAX_BATCH_BYTES = 16 * 1024 * 1024;
/**
 * Batches being written at once per database; more publishes wait and join the next batch. One:
 * notifying commits take a database-wide lock in turn, so a second batch in flight would mostly
 * wait at its commit, while publishes arriving meanwhile could join neither. Measured at 1,000
 * publishes/s (docs/performance-history.md, seventh session): 6 % less CPU per message than with
 * two and p50 latency 5.3–5.6 ms against 7.6–8.3, with no loss of publish throughput. A batch is
 * being written until its flush is confirmed: the next one starting at its commit instead made
 * smaller batches and cost PostgreSQL 6–10 % more per message at 7,000/s (thirteenth session).
 */
const MAX_WRITING = 1;

interface Pending {
  input: PublishInput;
  resolve(result: PublishResult): void;
  reject(error: unknown): void;
}

/**
 * Group publishing: publishes arriving while earlier ones are being written go out together, in
 * one statement and one commit (with its NOTIFY), with no added wait: an idle publisher writes at
 * once. The commit does not wait for its flush, so workers start on the batch at once; its
 * publishes are accepted after a flush barrier (publishUnflushed).
 */
class Publisher {
  private queue: Pending[] = [];
  private writing = 0;

  constructor(private readonly db: Database) {}

  publish(input: PublishInput): Promise<PublishResult> {
    return new Promise((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.writing < MAX_WRITING && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.batchLength());
      this.writing++;
      void this.write(batch).finally(() => {
        this.writing--;
        this.pump();
      });
    }
  }

  /** How many of the queued go in the next batch: up to MAX_BATCH, within MAX_BATCH_BYTES but the first. */
  private batchLength(): number {
    let bytes = 0;
    let n = 0;
    for (; n < Math.min(MAX_BATCH, this.queue.length); n++) {
      bytes += this.queue[n]!.input.payload.length;
      if (n > 0 && bytes > MAX_BATCH_BYTES) break;
    }
    return n;
  }

  private async write(batch: Pending[]): Promise<void> {
    let results: PublishResult[];
    try {
      results = await publishUnflushed(
        this.db,
        batch.map((p) => p.input),
      );
    } catch (error) {
      // Lost with its connection, the batch may have committed (the reply is what was lost), and
      // each message written again would be reported as a duplicate of itself: its outcome is
      // unknown, as for any commit whose connection drops.
      if (batch.length === 1 || error instanceof DatabaseUnavailableError) {
        for (const p of batch) p.reject(error);
        return;
      }
      // PostgreSQL refused the statement, so the batch was rolled back whole; one bad message
      // must not fail the others, so each alone.
      await Promise.all(batch.map((p) => this.write([p])));
      return;
    }
    try {
      await flushBarrier(this.db);
    } catch (error) {
      // Committed but not known to be durable: the outcome is unknown, as when a commit's
      // connection drops (a retry with the same eventId cannot store the message twice).
      for (const p of batch) p.reject(error);
      return;
    }
    for (const [i, p] of batch.entries()) p.resolve(results[i]!);
  }
}

const publishers = new WeakMap<Database, Publisher>();

/**
 * Publishes a message: one delivery per matching endpoint, atomically. On a database it joins
 * the next group commit; inside a transaction it is part of that transaction, and workers are
 * woken when it commits (the transactional outbox).
 */
export async function publish(q: Queryable, input: PublishInput): Promise<PublishResult> {
  if (!isDatabase(q)) return (await publishBatch(q, [input]))[0]!;
  let publisher = publishers.get(q);
  if (!publisher) {
    publisher = new Publisher(q);
    publishers.set(q, publisher);
  }
  return publisher.publish(input);
}
