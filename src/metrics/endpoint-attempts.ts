/**
 * courier_endpoint_attempts_total{endpoint, result}: the attempts of each endpoint, made only when
 * COURIER_METRICS_ENDPOINTS is above 0. Each series costs Prometheus memory for as long as it is
 * kept, so the endpoints named are bounded: the first `limit` this process attempts since its
 * start keep a series of their own, and every later one's attempts add up under `endpoint="other"`.
 */
import { Counter, type Registry } from 'prom-client';

/** The label of the endpoints past the limit: an endpoint's id always starts `ep_`. */
export const OTHER_ENDPOINTS = 'other';

export class EndpointAttempts {
  private readonly named = new Set<string>();
  private readonly counter: Counter<'endpoint' | 'result'>;

  constructor(
    registry: Registry,
    private readonly limit: number,
  ) {
    this.counter = new Counter({
      name: 'courier_endpoint_attempts_total',
      help: `Delivery attempts by endpoint id and by the worker's decision for the delivery (delivered, retry, failed, expired); the first ${limit} endpoints this process attempted since its start each have their own series (COURIER_METRICS_ENDPOINTS), later ones add up under endpoint="${OTHER_ENDPOINTS}"`,
      labelNames: ['endpoint', 'result'] as const,
      registers: [registry],
    });
  }

  attempted(endpointId: string, result: string): void {
    this.counter.inc({ endpoint: this.label(endpointId), result });
  }

  private label(endpointId: string): string {
    if (this.named.has(endpointId)) return endpointId;
    if (this.named.size >= this.limit) return OTHER_ENDPOINTS;
    this.named.add(endpointId);
    return endpointId;
  }
}
