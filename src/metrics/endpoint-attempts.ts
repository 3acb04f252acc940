/**
 * courier_endpoint_attempts_total{endpoint_id, result}: the attempts of each endpoint, made only
 * when COURIER_METRICS_ENDPOINTS is above 0. Each series costs Prometheus memory for as long as it
 * is kept, so the endpoints named are bounded: `limit` at a time, each named at its first attempt
 * while a place is free, and every other one's attempts add up under `endpoint_id="other"`. A
 * place is freed when its endpoint is deleted (`forget`), or, while others' attempts wait for one,
 * once it has gone IDLE_MS without an attempt: so the places follow the endpoints that receive.
 * (`endpoint_id`, not `endpoint`: Prometheus Operator's scrapes set an `endpoint` label of their
 * own, the port's name.)
 */
import { Counter, type Registry } from 'prom-client';
import type { Clock } from '../clock.ts';

/** The label of the endpoints past the limit: an endpoint's id always starts `ep_`. */
export const OTHER_ENDPOINTS = 'other';
/** The worker's decision for the delivery, as courier_attempts_total's `result`. */
export const ATTEMPT_RESULTS = ['delivered', 'retry', 'failed', 'expired'] as const;
export type AttemptResult = (typeof ATTEMPT_RESULTS)[number];
/**
 * How long a named endpoint goes without an attempt before its place may go to another: longer
 * than the windows rate() is read over, so a place changes hands only between bursts. Its series
 * then ends; named again later, it resumes from 0, which Prometheus reads as a counter reset.
 */
export const IDLE_MS = 60 * 60_000;

export class EndpointAttempts {
  /** The endpoints named, each with the instant of its latest attempt. */
  private readonly names = new Map<string, number>();
  /** Deleted endpoints, whose attempts still in flight are counted under other (at most `limit`, oldest dropped first). */
  private readonly gone = new Set<string>();
  /** An attempt counted under other since the last scrape: an endpoint waited for a place. */
  private waiting = false;
  private readonly counter: Counter<'endpoint_id' | 'result'>;

  constructor(
    registry: Registry,
    private readonly limit: number,
    private readonly clock: Clock,
  ) {
    const attempts = this;
    this.counter = new Counter({
      name: 'courier_endpoint_attempts_total',
      help: `Delivery attempts by endpoint id and by the worker's decision for the delivery (delivered, retry, failed, expired): ${limit} endpoints at most have their own series (COURIER_METRICS_ENDPOINTS), each from its first attempt while a place is free until it is deleted, or goes an hour without an attempt while others wait for a place; the others add up under endpoint_id="${OTHER_ENDPOINTS}"; courier_endpoint_info tells each one's application`,
      labelNames: ['endpoint_id', 'result'] as const,
      registers: [registry],
      collect() {
        attempts.freeIdle();
      },
    });
    this.start(OTHER_ENDPOINTS);
  }

  attempted(endpointId: string, result: AttemptResult): void {
    this.counter.inc({ endpoint_id: this.label(endpointId), result });
  }

  /** The endpoints with series of their own. */
  named(): string[] {
    return [...this.names.keys()];
  }

  /** Drops the series of endpoints deleted, freeing their places for endpoints attempted later. */
  forget(endpointIds: readonly string[]): void {
    for (const endpointId of endpointIds) {
      if (!this.drop(endpointId)) continue;
      this.gone.add(endpointId);
      if (this.gone.size > this.limit) this.gone.delete(this.gone.values().next().value!);
    }
  }

  private label(endpointId: string): string {
    const now = this.clock.now();
    if (this.names.has(endpointId)) {
      this.names.set(endpointId, now);
      return endpointId;
    }
    if (this.gone.has(endpointId)) return OTHER_ENDPOINTS;
    if (this.names.size >= this.limit) {
      this.waiting = true;
      return OTHER_ENDPOINTS;
    }
    this.names.set(endpointId, now);
    this.start(endpointId);
    return endpointId;
  }

  /** At a scrape, when attempts waited for a place: the places of those idle for IDLE_MS freed. */
  private freeIdle(): void {
    if (!this.waiting) return;
    this.waiting = false;
    const before = this.clock.now() - IDLE_MS;
    for (const [endpointId, last] of this.names) if (last <= before) this.drop(endpointId);
  }

  private drop(endpointId: string): boolean {
    if (!this.names.delete(endpointId)) return false;
    for (const result of ATTEMPT_RESULTS) this.counter.remove({ endpoint_id: endpointId, result });
    return true;
  }

  /** Every result shown from 0: rate() and increase() skip a series' first sample, its first attempts with it. */
  private start(label: string): void {
    for (const result of ATTEMPT_RESULTS) this.counter.inc({ endpoint_id: label, result }, 0);
  }
}
