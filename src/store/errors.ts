/**
 * PostgreSQL broke a deadlock (40P01) or a serialization conflict (40001) by aborting this
 * transaction: what it did is undone, and running it again is expected to succeed.
 */
export function isConflictAbort(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '40P01' || code === '40001';
}

/** A row the caller named no longer exists (it was deleted, possibly concurrently). */
export class StoreNotFoundError extends Error {
  readonly code = 'NOT_FOUND';
  constructor(message: string) {
    super(message);
    this.name = 'StoreNotFoundError';
  }
}
