/**
 * courier_endpoint_attempts_total{endpoint_id, result}: the attempts of each endpoint, made only
 * when COURIER_METRICS_ENDPOINTS is above 0. Each series costs Prometheus memory for as long as it
 * is kept, so the endpoints named are bounded: `limit` at a time, each given a place at its first
 * attempt while one is free, and every other one's attempts add up under `endpoint_id="other"`. A
 * place is freed when its endpoint is deleted (`forget`), or, while others wait for one, once it
 * has gone IDLE_MS without an attempt: so the places follow the endpoints that receive.
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
 * than the windows rate() is read over, so a place changes hands only between bursts.
 */
export const IDLE_MS = 60 * 60_000;

interface Place {
  /** The instant of its latest attempt. */
  last: number;
  /** How many scrapes came before its latest attempt: once fewer than since, that attempt has been shown. */
  after: number;
  /**
   * How many scrapes came before it was given: once fewer than since, its series has been
   * collected at 0 by some scrape of the port. Until then its attempts are counted under other: a
   * series whose first sample is already above 0 hides those attempts from rate() and increase(),
   * and one named again after it was freed would not read as a counter reset.
   */
  given: number;
}

export class EndpointAttempts {
  private readonly places = new Map<string, Place>();
  /** Endpoints whose attempts went under other for lack of a place since the last scrape (at most `limit`). */
  private readonly waiting = new Set<string>();
  /** Deleted endpoints, whose attempts still in flight are counted under other (at most `limit`, oldest dropped first). */
  private readonly gone = new Set<string>();
  /**
   * Deleted endpoints' series, kept for one more scrape then removed: attempts may have reached
   * them after the scrape that found them deleted had read the values.
   */
  private retiring: string[] = [];
  private retired: string[] = [];
  private scrapes = 0;
  private readonly counter: Counter<'endpoint_id' | 'result'>;

  constructor(
    registry: Registry,
    private readonly limit: number,
    private readonly clock: Clock,
  ) {
    const attempts = this;
    this.counter = new Counter({
      name: 'courier_endpoint_attempts_total',
      help: `Delivery attempts by endpoint id and by the worker's decision for the delivery (delivered, retry, failed, expired): ${limit} endpoints at most have their own series (COURIER_METRICS_ENDPOINTS), each from a scrape after its first attempt (shown at 0 first) until it is deleted, or goes ${IDLE_MS / 60_000} minutes without an attempt while others wait for a place (named again, it starts from 0); the rest add up under endpoint_id="${OTHER_ENDPOINTS}"; courier_endpoint_info tells each one's application`,
      labelNames: ['endpoint_id', 'result'] as const,
      registers: [registry],
      collect() {
        attempts.scraped();
      },
    });
    this.start(OTHER_ENDPOINTS);
  }

  attempted(endpointId: string, result: AttemptResult): void {
    this.counter.inc({ endpoint_id: this.label(endpointId), result });
  }

  /** The endpoints with places, those given since the last scrape (not yet shown) included. */
  named(): string[] {
    return [...this.places.keys()];
  }

  /** Drops the series of endpoints deleted, freeing their places for endpoints attempted later. */
  forget(endpointIds: readonly string[]): void {
    for (const endpointId of endpointIds) {
      if (!this.places.delete(endpointId)) continue;
      this.retiring.push(endpointId);
      this.gone.add(endpointId);
      if (this.gone.size > this.limit) this.gone.delete(this.gone.values().next().value!);
    }
  }

  private label(endpointId: string): string {
    const now = this.clock.now();
    const place = this.places.get(endpointId);
    if (place) {
      place.last = now;
      place.after = this.scrapes;
      return place.given < this.scrapes ? endpointId : OTHER_ENDPOINTS;
    }
    if (this.gone.has(endpointId)) return OTHER_ENDPOINTS;
    if (this.places.size >= this.limit) {
      if (this.waiting.size < this.limit) this.waiting.add(endpointId);
      return OTHER_ENDPOINTS;
    }
    this.places.set(endpointId, { last: now, after: this.scrapes, given: this.scrapes });
    this.waiting.delete(endpointId);
    this.start(endpointId);
    return OTHER_ENDPOINTS;
  }

  /**
   * Called as a scrape reads the series: removes the series of endpoints deleted a scrape ago,
   * frees as many places as endpoints waited for one, the longest idle first and only those idle
   * for IDLE_MS; the places given since the last scrape are shown at 0 in this one, and count
   * their own attempts from now on.
   */
  private scraped(): void {
    const before = this.clock.now() - IDLE_MS;
    const earlier = this.scrapes++;
    // Unless named again meanwhile (let out of `gone` by more deletions than places): its series is in use.
    for (const endpointId of this.retired) if (!this.places.has(endpointId)) this.remove(endpointId);
    [this.retired, this.retiring] = [this.retiring, []];
    if (this.waiting.size > 0) {
      // Not attempted since the last scrape either, so its series is removed with every attempt shown.
      const idle = [...this.places].filter(([, place]) => place.last <= before && place.after < earlier);
      idle.sort(([, a], [, b]) => a.last - b.last);
      for (const [endpointId] of idle.slice(0, this.waiting.size)) {
        this.places.delete(endpointId);
        this.remove(endpointId);
      }
      this.waiting.clear();
    }
  }

  private remove(endpointId: string): void {
    for (const result of ATTEMPT_RESULTS) this.counter.remove({ endpoint_id: endpointId, result });
  }

  /** Every result shown from 0, so that rate() and increase() count from the first attempt on. */
  private start(label: string): void {
    for (const result of ATTEMPT_RESULTS) this.counter.inc({ endpoint_id: label, result }, 0);
  }
}
