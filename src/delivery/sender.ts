/**
 * Makes one webhook HTTP attempt and reports what happened as a policy Outcome. send() never throws
 * for anything the network or the receiver does; only misuse (bad headers, use after close) and this
 * machine running out of a resource (file descriptors, local ports) reject: neither is the receiver's.
 *
 * Hot path: requests go straight to undici's dispatcher with one handler object per attempt (no
 * response stream, no AbortSignal), and a single shared timer enforces the total deadline.
 */
import { Agent, type Dispatcher, errors } from 'undici';
import type { Clock } from '../clock.ts';
import type { Outcome } from '../policy/types.ts';
import { CONNECTION_HEADERS } from './connection-headers.ts';
import { DeadlineSweeper, type Expiring } from './deadlines.ts';
import { DeadlineError, isLocalFailure, isProgrammerError, outcomeForError } from './network-errors.ts';
import { BodyCapture, captureHeaders } from './response-capture.ts';
import { guardedLookup, type Resolver, type SsrfGuard } from './ssrf-guard.ts';

export const DEFAULT_USER_AGENT = 'Courier-Webhooks/0.1 (+https://github.com/courier-webhooks/courier)';
const HEADER_CAPTURE_BYTES = 4096;
const KEEP_ALIVE_TIMEOUT_MS = 4_000;
const KEEP_ALIVE_MAX_TIMEOUT_MS = 30_000;
const TARGET_CACHE_SIZE = 10_000;

export interface SenderOptions {
  readonly guard: SsrfGuard;
  readonly clock: Clock;
  readonly connectTimeoutMs?: number;
  /** Total deadline: connecting, response headers and the captured part of the body. */
  readonly requestTimeoutMs?: number;
  readonly maxResponseBytes?: number;
  readonly userAgent?: string;
  /** Keep-alive connections per origin. */
  readonly connections?: number;
  /** DNS resolver (dns.lookup-compatible); tests inject one. */
  readonly lookup?: Resolver;
}

export interface SendRequest {
  readonly url: string;
  /** Public addresses only: the guard's allow list does not apply (a public-only endpoint's URL). */
  readonly publicOnly?: boolean;
  readonly body: Buffer;
  readonly headers: Readonly<Record<string, string>>;
}

export interface SendResult {
  readonly outcome: Outcome;
  /** From the injected clock. */
  readonly startedAt: number;
  readonly durationMs: number;
  readonly responseStatus?: number;
  /**
   * A bounded copy of the headers of a response that was not a 2xx, for the attempt log: they say
   * why (Retry-After, a proxy's or firewall's headers); a 2xx response's are not kept.
   */
  readonly responseHeaders?: Record<string, string>;
  /** The first maxResponseBytes bytes, decoded as UTF-8 with replacement. */
  readonly responseBody?: string;
  /**
   * False only when we know no byte reached the receiver: SSRF refusal, DNS failure, connection
   * refused or timed out, or the deadline passing before the request was written. (A TLS failure
   * counts as sent: the handshake reached the receiver.)
   */
  readonly requestWentOut: boolean;
}

/** Where a URL sends, or why it must not; cached because endpoint URLs repeat. */
type Target = { readonly origin: string; readonly path: string } | { readonly refused: string };

/** Per-Sender settings every attempt reads. */
interface AttemptContext {
  readonly deadlines: DeadlineSweeper;
  readonly maxResponseBytes: number;
}

/**
 * A guard's connections and checked URLs. The operator's lane applies COURIER_ALLOW_PRIVATE_NETWORKS;
 * the public-only one (public-only endpoints' URLs) does not, and has its own pool, made when
 * first needed, since a connection's addresses are checked by the lookup of the agent opening it.
 */
interface Lane {
  readonly guard: SsrfGuard;
  readonly agent: Agent;
  readonly targets: Map<string, Target>;
}

export class Sender {
  readonly #opts: SenderOptions;
  readonly #requestTimeoutMs: number;
  readonly #clock: Clock;
  readonly #userAgent: string;
  readonly #context: AttemptContext;
  readonly #operator: Lane;
  #publicOnly: Lane | undefined;
  #closing: Promise<void> | undefined;

  constructor(opts: SenderOptions) {
    this.#opts = opts;
    this.#requestTimeoutMs = opts.requestTimeoutMs ?? 15_000;
    this.#clock = opts.clock;
    this.#userAgent = opts.userAgent ?? DEFAULT_USER_AGENT;
    this.#context = {
      deadlines: new DeadlineSweeper(this.#requestTimeoutMs),
      maxResponseBytes: opts.maxResponseBytes ?? 4096,
    };
    this.#operator = this.#lane(opts.guard);
  }

  send(req: SendRequest): Promise<SendResult> {
    const startedAt = this.#clock.now();
    const t0 = performance.now();
    const lane = req.publicOnly ? this.#publicOnlyLane() : this.#operator;
    if (!lane) return Promise.reject(new errors.ClientClosedError());
    const target = this.#target(lane, req.url);
    if ('refused' in target) {
      return Promise.resolve({
        outcome: { kind: 'refused', reason: target.refused },
        startedAt,
        durationMs: performance.now() - t0,
        responseStatus: undefined,
        responseHeaders: undefined,
        responseBody: undefined,
        requestWentOut: false,
      });
    }
    const dispatch: Dispatcher.DispatchOptions = {
      origin: target.origin,
      path: target.path,
      method: 'POST',
      body: req.body,
      headers: this.#headers(req.headers),
    };
    return new Promise((resolve, reject) => {
      const attempt = new Attempt(this.#context, startedAt, t0, resolve, reject);
      this.#context.deadlines.add(attempt);
      lane.agent.dispatch(dispatch, attempt);
    });
  }

  /** Waits for in-flight attempts (bounded by their deadline), then closes every connection. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= Promise.all([this.#operator.agent.close(), this.#publicOnly?.agent.close()]).then(
      () => undefined,
    );
    return this.#closing;
  }

  /** Made when first needed; not once closing, as nothing would close it. */
  #publicOnlyLane(): Lane | undefined {
    if (this.#closing && !this.#publicOnly) return undefined;
    this.#publicOnly ??= this.#lane(this.#opts.guard.publicOnly());
    return this.#publicOnly;
  }

  #lane(guard: SsrfGuard): Lane {
    const opts = this.#opts;
    const agent = new Agent({
      connections: opts.connections ?? 16,
      pipelining: 1,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      // undici follows a receiver's `Keep-Alive: timeout=N` up to this (600 s by default): receivers
      // on many origins could each keep idle sockets, and the worker's descriptors, for minutes.
      keepAliveMaxTimeout: KEEP_ALIVE_MAX_TIMEOUT_MS,
      // Off: the sweeper's total deadline ends every attempt, and the abort closes its connection.
      // undici's per-phase timers add a timer object per request that its timer list keeps for up
      // to half a second, long enough to be promoted out of the young generation: over 60,000-
      // delivery drains the median promoted 28 MB with them off against 53
      // (docs/performance-history.md, ninth session).
      headersTimeout: 0,
      bodyTimeout: 0,
      // net/tls.connect skip `lookup` for literal IPs; those are checked in #target() instead.
      // Never longer than the attempt's own deadline: a connect still opening after it (nothing to
      // abort yet) would hold a socket past the slot it freed, and hold up a shutdown.
      connect: {
        timeout: Math.min(opts.connectTimeoutMs ?? 10_000, this.#requestTimeoutMs),
        lookup: guardedLookup(guard, opts.lookup),
      },
    });
    return { guard, agent, targets: new Map() };
  }

  #target({ guard, targets }: Lane, url: string): Target {
    let target = targets.get(url);
    if (target) return target;
    const check = guard.checkUrl(url);
    if (check.ok) {
      const parsed = new URL(url);
      target = { origin: parsed.origin, path: parsed.pathname + parsed.search };
    } else {
      target = { refused: check.reason };
    }
    if (targets.size >= TARGET_CACHE_SIZE) targets.clear();
    targets.set(url, target);
    return target;
  }

  /** The caller's headers but connection headers, plus user-agent and content-type unless the caller set them. */
  #headers(given: Readonly<Record<string, string>>): string[] {
    const flat: string[] = [];
    let hasAgent = false;
    let hasType = false;
    for (const name in given) {
      const lower = name.toLowerCase();
      if (CONNECTION_HEADERS.has(lower)) continue;
      flat.push(name, given[name]!);
      if (lower === 'user-agent') hasAgent = true;
      else if (lower === 'content-type') hasType = true;
    }
    if (!hasAgent) flat.push('user-agent', this.#userAgent);
    if (!hasType) flat.push('content-type', 'application/json');
    return flat;
  }
}

const BODY_CAPPED = new Error('response body longer than maxResponseBytes; rest discarded');

/** One attempt, as an undici dispatch handler. Settles exactly once; later callbacks are ignored. */
class Attempt implements Dispatcher.DispatchHandler, Expiring {
  readonly deadline: number;
  #controller: Dispatcher.DispatchController | null = null;
  #settled = false;
  #started = false;
  #status = 0;
  #headers: Record<string, string> | undefined;
  /** All the response's headers, for the policy (Retry-After): the log's bounded copy may lack them. */
  #allHeaders: Record<string, string | string[] | undefined> | undefined;
  #body: BodyCapture | undefined;

  constructor(
    private readonly context: AttemptContext,
    private readonly startedAt: number,
    private readonly t0: number,
    private readonly resolve: (result: SendResult) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    this.deadline = t0 + context.deadlines.timeoutMs;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    // Deadline passed while queued or connecting: never send it.
    if (this.#settled) {
      controller.abort(new DeadlineError(this.context.deadlines.timeoutMs));
      return;
    }
    this.#controller = controller;
    this.#started = true;
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (statusCode < 200) return; // 1xx: the real response follows
    this.#status = statusCode;
    this.#allHeaders = headers;
    if (statusCode >= 300) this.#headers = captureHeaders(headers, HEADER_CAPTURE_BYTES);
    this.#body = new BodyCapture(this.context.maxResponseBytes);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#body?.push(chunk)) {
      // Enough to show; the rest could be endless. Aborting closes this socket, which is fine.
      this.#settleResponse();
      controller.abort(BODY_CAPPED);
    }
  }

  onResponseEnd(): void {
    this.#settleResponse();
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, err: Error): void {
    if (this.#settled) return;
    if (isProgrammerError(err) || isLocalFailure(err)) {
      this.#settled = true;
      this.context.deadlines.delete(this);
      this.reject(err);
      return;
    }
    const outcome = outcomeForError(err);
    const wentOut = this.#started || (outcome.kind === 'network' && outcome.failure === 'tls');
    this.#settle(outcome, wentOut);
  }

  expire(): void {
    if (this.#settled) return;
    const err = new DeadlineError(this.context.deadlines.timeoutMs);
    this.#settle(outcomeForError(err), this.#started);
    this.#controller?.abort(err);
  }

  #settleResponse(): void {
    if (this.#settled) return;
    this.#settle({ kind: 'response', status: this.#status, headers: this.#allHeaders }, true);
  }

  /**
   * Network failures keep whatever status/headers/body arrived before, for the attempt log, and
   * the status and headers in the outcome, for the policy (a Retry-After).
   */
  #settle(failed: Outcome, requestWentOut: boolean): void {
    const outcome: Outcome =
      failed.kind === 'network' && this.#status !== 0
        ? { ...failed, answered: { status: this.#status, headers: this.#allHeaders } }
        : failed;
    this.#settled = true;
    this.context.deadlines.delete(this);
    this.resolve({
      outcome,
      startedAt: this.startedAt,
      durationMs: performance.now() - this.t0,
      responseStatus: this.#status === 0 ? undefined : this.#status,
      responseHeaders: this.#headers,
      responseBody: this.#body?.text(),
      requestWentOut,
    });
  }
}
