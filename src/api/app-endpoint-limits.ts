/**
 * What an application's token (a customer) may set of an endpoint's delivery settings. These are
 * the operator's: the worker's capacity shared by every endpoint, and how hard a receiver is
 * pressed. A customer may ask for less, not more: `maxInFlight` up to COURIER_MAX_IN_FLIGHT,
 * `rateLimit` up to the endpoint's default, `retryPolicy` only as it is (a zero-backoff, endless
 * policy would be a hot loop). A value the endpoint already has passes, so a form read back and
 * sent whole is accepted.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Endpoint, EndpointFields } from '../store/repos/endpoints.ts';
import { fieldError } from './errors.ts';

/** The most a token may set: the defaults an endpoint created without them gets. */
export interface AppLimits {
  maxInFlight: number;
  rateLimit: number;
}

/** Throws a 422 on the first setting the token may not write; `rateLoc` is the field the caller used. */
export function checkAppLimits(
  fields: EndpointFields,
  current: Endpoint | null,
  limits: AppLimits,
  rateLoc: 'rateLimit' | 'throttleRate',
): void {
  if (fields.maxInFlight > limits.maxInFlight && fields.maxInFlight !== current?.maxInFlight)
    throw fieldError(
      ['body', 'maxInFlight'],
      `an application's token sets maxInFlight up to ${limits.maxInFlight} (COURIER_MAX_IN_FLIGHT); more takes the admin token`,
    );
  if (fields.rateLimit > limits.rateLimit && fields.rateLimit !== current?.rateLimit)
    throw fieldError(
      ['body', rateLoc],
      `an application's token sets ${rateLoc} up to ${limits.rateLimit}, the endpoint's default (its application's rateLimit, else COURIER_RATE_LIMIT); more takes the admin token`,
    );
  if (!isDeepStrictEqual(fields.retryPolicy ?? null, current?.retryPolicy ?? null))
    throw fieldError(
      ['body', 'retryPolicy'],
      "only the admin token sets retryPolicy; an application's token may send it unchanged",
    );
}
