import type { Clock } from '../clock.ts';
import type { Logger } from '../logger.ts';
import type { Queryable } from '../store/db.ts';
import { releaseHostHolds } from '../store/queries/host-holds.ts';
import type { HeldSlots } from './held-slots.ts';

/**
 * Frees the slots of deliveries whose outcome is written; with a per-host cap (migration 0030),
 * also ends as many of the holds claims put on those hosts' other endpoints, which would otherwise
 * wait out their hold with the host's slots unused.
 */
export class HostHolds {
  constructor(
    private readonly held: HeldSlots,
    private readonly db: Queryable,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** The worker's per-host cap; 0: none, and nothing to end. */
    private readonly hostCap: number,
  ) {}

  /**
   * True when holds ended (work to claim). A failure to end them only delays those endpoints until
   * their hold runs out (500 ms).
   */
  async free(deliveryIds: readonly number[]): Promise<boolean> {
    if (this.hostCap === 0) {
      for (const id of deliveryIds) this.held.letGo(id);
      return false;
    }
    const endpoints = new Set<string>();
    let freed = 0;
    for (const id of deliveryIds) {
      const endpointId = this.held.letGo(id);
      if (endpointId === undefined) continue;
      endpoints.add(endpointId);
      freed++;
    }
    if (freed === 0) return false;
    try {
      return await releaseHostHolds(this.db, [...endpoints], freed, this.clock.now());
    } catch (err) {
      this.log.warn({ err }, 'could not end the holds on full hosts; they run out on their own');
      return false;
    }
  }
}
