import { Type } from 'typebox';
import { endpointStats } from '../../store/repos/endpoint-stats.ts';
import { createError } from '../errors.ts';
import { requireEndpoint } from '../lookup.ts';
import { iso, msOf, Timestamp } from '../schemas/common.ts';
import { EndpointParams } from '../schemas/endpoints.ts';
import type { Api, ApiDeps } from '../types.ts';

const DAY_MS = 86_400_000;
/** Svix's bound on one window; it keeps a count to an index range of at most four weeks. */
const MAX_WINDOW_MS = 28 * DAY_MS;
/** Slack for the caller's clock: `until` computed as its own now, `since` as that minus 28 days. */
const SLACK_MS = 5 * 60_000;

const invalidRange = createError('invalid_range', 'Invalid time range', 400);

const EndpointStatsOut = Type.Object(
  {
    success: Type.Integer({ description: 'Delivered.' }),
    pending: Type.Integer({ description: 'Waiting for an attempt (or held while the endpoint is paused).' }),
    sending: Type.Integer({ description: 'An attempt is under way.' }),
    fail: Type.Integer({ description: 'Failed for good or expired: in the dead letter.' }),
    canceled: Type.Integer({ description: 'Always 0: Courier cancels no delivery (Svix counts some).' }),
  },
  { title: 'EndpointStats' },
);

/** A query instant in ms; one before 1970, which no id can carry, is refused. */
function instant(value: string | undefined, name: string): number | undefined {
  const ms = msOf(value);
  if (ms === undefined) return undefined;
  if (ms < 0) throw invalidRange(`'${name}' must be a date-time from 1970 on`);
  return ms;
}

/** The window a stats request covers: Svix's defaults and bounds, with the caller's clock allowed some skew. */
export function statsWindow(
  query: { since?: string; until?: string },
  now: number,
): { since: number; until: number } {
  const until = instant(query.until, 'until') ?? now;
  if (until > now + SLACK_MS) throw invalidRange(`'until' cannot be in the future (now is ${iso(now)})`);
  // Nothing was published before 1970: a default window reaching back past it starts there.
  const since = instant(query.since, 'since') ?? Math.max(0, until - MAX_WINDOW_MS);
  if (since > until) throw invalidRange(`'since' (${iso(since)}) is after 'until' (${iso(until)})`);
  if (until - since > MAX_WINDOW_MS + SLACK_MS) {
    throw invalidRange(`'since' cannot be more than 28 days before 'until' (${iso(until)})`);
  }
  return { since, until };
}

export function endpointStatsRoutes(app: Api, deps: ApiDeps): void {
  const { db, clock } = deps;

  app.get(
    '/api/v1/app/:app_id/endpoint/:endpoint_id/stats',
    {
      schema: {
        tags: ['Endpoint'],
        summary: 'Get endpoint stats',
        description:
          'How many messages created in the window stand where at this endpoint: delivered, pending, being ' +
          'sent, or failed. The window defaults to the 28 days up to now and spans at most 28 days. Counts ' +
          'cover what is retained (COURIER_RETENTION).',
        params: EndpointParams,
        querystring: Type.Object({
          since: Type.Optional(Timestamp),
          until: Type.Optional(Timestamp),
        }),
        response: { 200: EndpointStatsOut },
      },
    },
    async (request) => {
      const window = statsWindow(request.query, clock.now());
      const { endpoint } = await requireEndpoint(db, request.params.app_id, request.params.endpoint_id);
      return { ...(await endpointStats(db, endpoint.id, window)), canceled: 0 };
    },
  );
}
