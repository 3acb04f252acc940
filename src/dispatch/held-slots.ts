/**
 * The endpoint slots this worker holds: a delivery's from its claim until its completion or
 * give-back is written (sending, or sent and its outcome not yet written).
 */
export class HeldSlots {
  private readonly perEndpoint = new Map<string, number>();
  private readonly endpointOf = new Map<number, string>();

  has(deliveryId: number): boolean {
    return this.endpointOf.has(deliveryId);
  }

  take(deliveryId: number, endpointId: string): void {
    this.endpointOf.set(deliveryId, endpointId);
    this.perEndpoint.set(endpointId, this.count(endpointId) + 1);
  }

  count(endpointId: string): number {
    return this.perEndpoint.get(endpointId) ?? 0;
  }

  /** Its completion or release is written: the delivery's slot is free again. Returns its endpoint. */
  letGo(deliveryId: number): string | undefined {
    const endpointId = this.endpointOf.get(deliveryId);
    if (endpointId === undefined) return undefined;
    this.endpointOf.delete(deliveryId);
    const n = this.count(endpointId) - 1;
    if (n > 0) this.perEndpoint.set(endpointId, n);
    else this.perEndpoint.delete(endpointId);
    return endpointId;
  }

  clear(): void {
    this.perEndpoint.clear();
    this.endpointOf.clear();
  }
}
