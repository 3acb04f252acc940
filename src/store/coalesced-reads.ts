/**
 * Reads by key, coalesced: keys asked for while a read is under way go together in the next one,
 * with no added wait (an idle reader reads at once). Each read starts after its keys were asked
 * for, so it sees every commit made before they were: unlike a cache, it never answers stale.
 * Measured on the API's publishes (docs/performance-history.md, fifty-seventh session): one
 * application lookup per request was two thirds of the queries `courier serve` sent.
 */
export class CoalescedReads<V> {
  /** Keys not yet read, each with its callers' resolve functions. */
  private readonly waiting = new Map<string, Array<(result: Promise<V | undefined>) => void>>();
  private reading = false;

  constructor(
    /** The values found for the keys, by key; a key missing from it has none. */
    private readonly read: (keys: string[]) => Promise<Map<string, V>>,
    private readonly maxKeys: number,
  ) {}

  get(key: string): Promise<V | undefined> {
    return new Promise((resolve) => {
      const waiters = this.waiting.get(key);
      if (waiters) waiters.push(resolve);
      else this.waiting.set(key, [resolve]);
      this.pump();
    });
  }

  private pump(): void {
    if (this.reading || this.waiting.size === 0) return;
    const batch = [...this.waiting].slice(0, this.maxKeys);
    for (const [key] of batch) this.waiting.delete(key);
    this.reading = true;
    // A read that throws at once fails its batch as a rejected one would, and the next goes on.
    const found = new Promise<Map<string, V>>((resolve) => resolve(this.read(batch.map(([key]) => key))));
    for (const [key, waiters] of batch) {
      const result = found.then((values) => values.get(key));
      for (const resolve of waiters) resolve(result);
    }
    // The next batch waits for this one's answer, failed or not (each of its callers sees a failure).
    void found
      .catch(() => {})
      .finally(() => {
        this.reading = false;
        this.pump();
      });
  }
}
