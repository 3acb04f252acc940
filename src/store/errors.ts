/** A row the caller named no longer exists (it was deleted, possibly concurrently). */
export class StoreNotFoundError extends Error {
  readonly code = 'NOT_FOUND';
  constructor(message: string) {
    super(message);
    this.name = 'StoreNotFoundError';
  }
}
