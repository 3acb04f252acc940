/**
 * An endpoint whose every attempt has failed for days is most likely gone for good (a shut-down
 * service, a domain that lapsed), whatever the failures are: 5xx and timeouts never make a streak
 * of permanent failures. As Svix does, it is disabled after 5 days by default. The store keeps the
 * run's start (failing_since, migration 0031: a success ends it, a day without a failure starts
 * it again); this says when the run is long enough.
 */

export const DEFAULT_DISABLE_FAILING_AFTER_MS = 5 * 86_400_000;

/** Whether an endpoint failing since `failingSince` is to be disabled at `now` (`disableAfterMs` null: never). */
export function failingTooLong(
  failingSince: number | null,
  now: number,
  disableAfterMs: number | null,
): boolean {
  return disableAfterMs !== null && failingSince !== null && now - failingSince >= disableAfterMs;
}
