/**
 * What an application's token (a customer) may set of an endpoint's delivery settings. These are
 * the operator's: the worker's capacity shared by every endpoint, and how hard a receiver is
 * pressed. A customer may ask for less, not more: `maxInFlight` up to COURIER_MAX_IN_FLIGHT,
 * `rateLimit` up to the endpoint's default; while its URL stays, up to what the operator set for
 * that URL, above the default or below it (back up to it after lowering it), or where the
 * operator set nothing since 0040, up to the endpoint's own higher value; `retryPolicy` only as it
 * is (a zero-backoff, endless policy would be a hot loop).
 */
import { isDeepStrictEqual } from 'node:util';
import type { Endpoint, EndpointFields } from '../store/repos/endpoints.ts';
import { fieldChecks } from './errors.ts';

/** The most a token may set: the defaults an endpoint created without them gets. */
export interface AppLimits {
  maxInFlight: number;
  rateLimit: number;
}

const DEFAULT_OF = {
  maxInFlight: 'COURIER_MAX_IN_FLIGHT',
  rateLimit: "the endpoint's default: its application's rateLimit, else COURIER_RATE_LIMIT",
};

/**
 * The fields as a token may write them, or a 422 naming every one it may not; `rateLoc` is the rate
 * field the caller used. What the operator set stays with the URL: when the token moves the
 * endpoint, a raised value comes down to the default, even sent back as it was read, and a lowered
 * one stays but is the token's to raise.
 */
export function withinAppLimits(
  fields: EndpointFields,
  current: Endpoint | null,
  limits: AppLimits,
  rateLoc: 'rateLimit' | 'throttleRate',
): EndpointFields {
  const moved = fields.url !== current?.url;
  const refused = fieldChecks();
  const bound = (field: keyof AppLimits, loc: string): number => {
    const value = fields[field];
    const operators = moved ? null : current!.operatorLimits[field];
    // Never less than the endpoint has while its URL stays: lowering is always the token's (a
    // previous release's operator write may have left it above what 0040 records).
    const own = moved ? limits[field] : Math.max(operators ?? limits[field], current![field]);
    if (value <= own) return value;
    // Sent as the endpoint has it (kept, or a form read back), not asked for: brought down.
    if (moved && value === current?.[field]) return limits[field];
    const why =
      own === operators
        ? "the operator's, for this URL"
        : own !== limits[field]
          ? "the endpoint's own, kept while its URL stays"
          : current && current[field] > own
            ? `${DEFAULT_OF[field]}, as a new URL brings the endpoint's ${current[field]} down to it`
            : DEFAULT_OF[field];
    refused.refuse(
      ['body', loc],
      `an application's token sets ${loc} up to ${own} (${why}); more takes the admin token`,
    );
    return value;
  };
  const maxInFlight = bound('maxInFlight', 'maxInFlight');
  const rateLimit = bound('rateLimit', rateLoc);
  if (!isDeepStrictEqual(fields.retryPolicy ?? null, current?.retryPolicy ?? null))
    refused.refuse(
      ['body', 'retryPolicy'],
      "only the admin token sets retryPolicy; an application's token may send it unchanged",
    );
  refused.done();
  return { ...fields, maxInFlight, rateLimit };
}
