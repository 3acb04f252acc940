/**
 * Endpoint request bodies to EndpointFields, with the checks JSON Schema cannot express: the URL
 * against the SSRF guard, the secret's encoding, header safety, and the retry policy as Courier
 * will actually build it. POST and PUT replace (absent → default); PATCH keeps what is absent.
 * `null` means "back to the default" in both. An application's token keeps the delivery settings
 * it leaves out, and sets them within the operator's limits (app-endpoint-limits.ts).
 */
import type { FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import { type Config, ssrfGuard } from '../config.ts';
import { effectivePolicy } from '../dispatch/policy-resolver.ts';
import type { PolicyOverrides } from '../policy/index.ts';
import { formatSecret, parseSecret } from '../signing/index.ts';
import type { Application } from '../store/repos/applications.ts';
import type { Endpoint, EndpointFields, OperatorLimits } from '../store/repos/endpoints.ts';
import { withinAppLimits } from './app-endpoint-limits.ts';
import { fieldChecks, fieldError } from './errors.ts';
import { checkHeaders } from './headers.ts';
import type { EndpointPatch } from './schemas/endpoints.ts';

export type EndpointBody = Static<typeof EndpointPatch> & { headers?: Record<string, string> | null };
export type Mode = 'replace' | 'patch';

/**
 * Who writes an endpoint: the operator (the admin token, the configuration), or with its token an
 * application's owner, who sees the event types its feature flags show.
 */
export type Writer = 'operator' | { readonly featureFlags: readonly string[] };

export function writerOf(request: FastifyRequest): Writer {
  const principal = request.principal;
  if (principal?.kind === 'admin') return 'operator';
  return { featureFlags: principal?.kind === 'app' ? principal.featureFlags : [] };
}

function checkUrl(config: Config, url: string, publicOnly: boolean): void {
  const guard = ssrfGuard(config);
  const check = (publicOnly ? guard.publicOnly() : guard).checkUrl(url);
  if (!check.ok) throw fieldError(['body', 'url'], check.reason);
}

/**
 * Whether the endpoint reaches public addresses only (COURIER_ALLOW_PRIVATE_NETWORKS is the
 * operator's). A new URL from an application's token makes it so, and the token cannot undo it; a
 * new URL from the operator is the operator's, and `publicOnly` sets it either way. Otherwise,
 * a PUT included, it stays: re-sending a form does not vouch for a URL nor disown it.
 */
function publicOnlyOf(body: EndpointBody, url: string, current: Endpoint | null, writer: Writer): boolean {
  const moved = url !== current?.url;
  if (writer !== 'operator') {
    const publicOnly = moved || body.publicOnly === true || !!current?.publicOnly;
    if (publicOnly && body.publicOnly === false)
      throw fieldError(
        ['body', 'publicOnly'],
        "only the admin token opens an endpoint to COURIER_ALLOW_PRIVATE_NETWORKS; an application's token sets public addresses only",
      );
    return publicOnly;
  }
  return body.publicOnly ?? (moved ? false : !!current?.publicOnly);
}

/** The secret in Courier's stored form (whsec_ + standard base64), or a 422. */
export function normalizeSecret(secret: string, loc: string[]): string {
  try {
    return formatSecret(parseSecret(secret));
  } catch (error) {
    throw fieldError(loc, (error as Error).message);
  }
}

/** The policy must build when layered as the worker will layer it (installation, application, endpoint). */
export function checkPolicy(config: Config, layers: unknown[], loc: string[]): void {
  try {
    effectivePolicy(config.retry, ...(layers as (PolicyOverrides | null)[]));
  } catch (error) {
    throw fieldError(loc, (error as Error).message);
  }
}

/** absent: keep (patch) or default (replace); null: default; otherwise the value. */
function choose<T>(value: T | null | undefined, mode: Mode, current: T, fallback: T): T {
  if (value === undefined) return mode === 'patch' ? current : fallback;
  return value === null ? fallback : value;
}

/**
 * What the operator has set of the delivery settings, for the URL the endpoint now has: the
 * operator's write sets what it gives, but a PUT sending a value as the endpoint has it with its
 * URL (a form or the SDK's update read back) leaves the record as it was, and clears what goes
 * back to the default (null, or left out of a PUT or a creation); a token's keeps them, its new URL
 * aside.
 */
function operatorLimitsOf(
  given: { maxInFlight: number | null | undefined; rateLimit: number | null | undefined },
  mode: Mode,
  current: Endpoint | null,
  writer: Writer,
  moved: boolean,
): OperatorLimits {
  const none = { maxInFlight: null, rateLimit: null };
  const kept = current?.operatorLimits ?? none;
  if (writer !== 'operator') return moved ? none : kept;
  // A PUT is how a form or the SDK's update sends back what it read; a PATCH asks for what it sends.
  const readBack = (field: keyof OperatorLimits) =>
    mode === 'replace' && !moved && given[field] === current?.[field];
  const set = (field: keyof OperatorLimits) =>
    readBack(field) ? kept[field] : choose(given[field], mode, kept[field], null);
  return { maxInFlight: set('maxInFlight'), rateLimit: set('rateLimit') };
}

/** The first of two alias fields the caller set (filterTypes/eventTypes, rateLimit/throttleRate). */
export function alias<T>(a: T | null | undefined, b: T | null | undefined): T | null | undefined {
  return a !== undefined ? a : b;
}

/**
 * The endpoint's fields as written, and the secret the body gives in its stored form (null: none
 * given); one 422 names every field refused. `unseenTypes`: event types its filter names that the
 * writer may not name (endpoint-writes.ts).
 */
export function endpointInput(
  body: EndpointBody,
  mode: Mode,
  current: Endpoint | null,
  config: Config,
  application: Pick<Application, 'rateLimit' | 'retryPolicy'>,
  writer: Writer,
  unseenTypes: readonly string[] = [],
): { fields: EndpointFields; secret: string | null } {
  const appPolicy = application.retryPolicy;
  // The application's rate limit is its endpoints' default; the installation's when it has none.
  const defaultRate = application.rateLimit ?? config.rateLimit;
  const url = body.url ?? current?.url;
  if (url === undefined) throw fieldError(['body', 'url'], 'Field required', 'value_error.missing');
  const refused = fieldChecks();
  const secret = body.secret
    ? refused.check(() => normalizeSecret(body.secret!, ['body', 'secret']), null)
    : null;
  // A refused publicOnly is a token's, whose endpoint stays public-only.
  const publicOnly = refused.check(() => publicOnlyOf(body, url, current, writer), true);
  // A URL kept is checked again when the flag now closes private networks to it.
  if (body.url !== undefined || (publicOnly && !current?.publicOnly))
    refused.check(() => checkUrl(config, url, publicOnly), undefined);
  if (body.headers) refused.check(() => checkHeaders(body.headers!, ['body', 'headers']), undefined);
  // The operator's delivery settings stay when a token leaves them out, its PUT too (the SDK's
  // endpoint.update does not know Courier's extensions).
  const settingsMode = writer !== 'operator' ? 'patch' : mode;
  const types = choose(alias(body.filterTypes, body.eventTypes), mode, current?.eventTypes ?? null, null);
  if (unseenTypes.length > 0)
    refused.refuse(
      ['body', body.filterTypes === undefined ? 'eventTypes' : 'filterTypes'],
      `The following event types don't exist: ${unseenTypes.join(', ')}`,
    );
  const channels = choose(body.channels, mode, current?.channels ?? null, null);
  const rateGiven = alias(body.rateLimit, body.throttleRate);
  let fields: EndpointFields = {
    url,
    publicOnly,
    uid: choose(body.uid, mode, current?.uid ?? null, null),
    description: choose(body.description, mode, current?.description ?? '', ''),
    eventTypes: types && types.length > 0 ? types : null,
    channels: channels && channels.length > 0 ? channels : null,
    rateLimit: choose(rateGiven, settingsMode, current?.rateLimit ?? defaultRate, defaultRate),
    maxInFlight: choose(
      body.maxInFlight,
      settingsMode,
      current?.maxInFlight ?? config.maxInFlight,
      config.maxInFlight,
    ),
    operatorLimits: operatorLimitsOf(
      { maxInFlight: body.maxInFlight, rateLimit: rateGiven },
      mode,
      current,
      writer,
      url !== current?.url,
    ),
    retryPolicy: choose<unknown>(body.retryPolicy, settingsMode, current?.retryPolicy ?? null, null),
    // Headers have their own routes; only creation takes them in the body.
    headers: current ? current.headers : (body.headers ?? {}),
    metadata: choose(body.metadata, mode, current?.metadata ?? {}, {}),
    version: choose(body.version, mode, current?.version ?? 1, 1),
  };
  if (writer !== 'operator') {
    const rateLoc =
      body.rateLimit === undefined && body.throttleRate !== undefined ? 'throttleRate' : 'rateLimit';
    const limits = { maxInFlight: config.maxInFlight, rateLimit: defaultRate };
    fields = refused.check(() => withinAppLimits(fields, current, limits, rateLoc), fields);
  }
  if (body.retryPolicy)
    refused.check(
      () => checkPolicy(config, [appPolicy, body.retryPolicy], ['body', 'retryPolicy']),
      undefined,
    );
  refused.done();
  return { fields, secret };
}
