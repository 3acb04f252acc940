/**
 * courier_endpoint_attempts_total{endpoint_id, result}: the attempts of each endpoint, made only
 * when COURIER_METRICS_ENDPOINTS is above 0. Each series costs Prometheus memory for as long as it
 * is kept, so the endpoints named are bounded: the first `limit` this process attempts since its
 * start keep series of their own until it restarts or they are deleted (`forget`), and every later
 * one's attempts add up under `endpoint_id="other"` while no place is free. (`endpoint_id`, not
 * `endpoint`: Prometheus Operator's scrapes set an `endpoint` label of their own, the port's name.)
 */
import { Counter, type Registry } from 'prom-client';

/** The label of the endpoints past the limit: an endpoint's id always starts `ep_`. */
export const OTHER_ENDPOINTS = 'other';
/** The worker's decision for the delivery, as courier_attempts_total's `result`. */
export const ATTEMPT_RESULTS = ['delivered', 'retry', 'failed', 'expired'] as const;
export type AttemptResult = (typeof ATTEMPT_RESULTS)[number];

export class EndpointAttempts {
  private readonly names = new Set<string>();
  private readonly counter: Counter<'endpoint_id' | 'result'>;

  constructor(
    registry: Registry,
    private readonly limit: number,
  ) {
    this.counter = new Counter({
      name: 'courier_endpoint_attempts_total',
      help: `Delivery attempts by endpoint id and by the worker's decision for the delivery (delivered, retry, failed, expired); the first ${limit} endpoints this process attempted since its start each have their own series until deleted (COURIER_METRICS_ENDPOINTS), later ones add up under endpoint_id="${OTHER_ENDPOINTS}" while no place is free; courier_endpoint_info tells each one's application`,
      labelNames: ['endpoint_id', 'result'] as const,
      registers: [registry],
    });
    this.start(OTHER_ENDPOINTS);
  }

  attempted(endpointId: string, result: AttemptResult): void {
    this.counter.inc({ endpoint_id: this.label(endpointId), result });
  }

  /** The endpoints with series of their own, in the order they were first attempted. */
  named(): string[] {
    return [...this.names];
  }

  /** Drops the series of endpoints deleted, freeing their places for endpoints attempted later. */
  forget(endpointIds: readonly string[]): void {
    for (const endpointId of endpointIds) {
      if (!this.names.delete(endpointId)) continue;
      for (const result of ATTEMPT_RESULTS) this.counter.remove({ endpoint_id: endpointId, result });
    }
  }

  private label(endpointId: string): string {
    if (this.names.has(endpointId)) return endpointId;
    if (this.names.size >= this.limit) return OTHER_ENDPOINTS;
    this.names.add(endpointId);
    this.start(endpointId);
    return endpointId;
  }

  /** Every result shown from 0: rate() and increase() skip a series' first sample, its first attempts with it. */
  private start(label: string): void {
    for (const result of ATTEMPT_RESULTS) this.counter.inc({ endpoint_id: label, result }, 0);
  }
}
