import type { Queryable } from '../db.ts';
import { toDate, toMs } from '../rows.ts';
import { openSecret } from '../secrets-at-rest.ts';

export interface EndpointConfig {
  version: string;
  url: string;
  headers: Record<string, string>;
  endpointPolicy: unknown;
  appPolicy: unknown;
  /** The secrets that sign at `now`: a rotated-out one only until its grace period ends. */
  secretsAt(now: number): string[];
  /** Requests the endpoint may have in flight at once, across all workers. */
  maxInFlight: number;
  /** It reaches public addresses only (its URL set with an application's token, or so set by the admin token). */
  publicOnly: boolean;
}

interface ConfigRow {
  endpoint_id: string;
  endpoint_version: number;
  app_version: number;
  url: string;
  headers: Record<string, string> | null;
  endpoint_policy: unknown;
  app_policy: unknown;
  secret_keys: string[];
  secret_expiry: (Date | null)[];
  max_in_flight: number;
  public_only: boolean;
}

const MAX_ENTRIES = 10_000;

/** Earlier secrets, still in their grace period, that this process cannot open: it signs without them. */
export interface SkippedSecrets {
  endpointId: string;
  count: number;
  error: unknown;
}

export interface ResolvedConfigs {
  configs: ReadonlyMap<string, EndpointConfig>;
  /**
   * Endpoints whose configuration this process cannot use, and why: a current secret sealed with a
   * key it lacks, or (gone meanwhile) none found.
   */
  unreadable: ReadonlyMap<string, unknown>;
  /** Found as the configurations were read (once per config version): worth a warning. */
  skipped: SkippedSecrets[];
}

/**
 * Endpoint configuration (URL, headers, policies, secrets) by endpoint, valid while the endpoint's
 * and its application's config_version stay the same; every change bumps one of them.
 */
export class EndpointConfigCache {
  private readonly entries = new Map<string, EndpointConfig>();

  async resolve(
    db: Queryable,
    wanted: readonly { endpointId: string; version: string }[],
    now: number,
  ): Promise<ResolvedConfigs> {
    const unreadable = new Map<string, unknown>();
    const skipped: SkippedSecrets[] = [];
    const stale = new Set<string>();
    for (const { endpointId, version } of wanted) {
      if (this.entries.get(endpointId)?.version !== version) stale.add(endpointId);
    }
    if (this.entries.size + stale.size > MAX_ENTRIES) {
      this.entries.clear();
      for (const { endpointId } of wanted) stale.add(endpointId);
    }
    if (stale.size > 0) {
      const { rows } = await db.query<ConfigRow>('select * from courier_endpoint_configs($1, $2)', [
        [...stale],
        toDate(now),
      ]);
      for (const row of rows) {
        // One endpoint's secret that cannot be opened is that endpoint's problem alone.
        try {
          const opened = openSecrets(db, row);
          this.entries.set(row.endpoint_id, toConfig(opened.row));
          if (opened.errors.length > 0)
            skipped.push({
              endpointId: row.endpoint_id,
              count: opened.errors.length,
              error: opened.errors[0],
            });
        } catch (error) {
          this.entries.delete(row.endpoint_id);
          unreadable.set(row.endpoint_id, error);
        }
      }
    }
    // This claim's own view: a later claim's resolve may drop entries from the cache meanwhile.
    const configs = new Map<string, EndpointConfig>();
    for (const { endpointId } of wanted) {
      const config = this.entries.get(endpointId);
      if (config) configs.set(endpointId, config);
      else if (!unreadable.has(endpointId))
        unreadable.set(endpointId, new Error('endpoint configuration not found'));
    }
    return { configs, unreadable, skipped };
  }
}

/**
 * The row with its secrets opened. An earlier secret that cannot be opened (sealed by a process
 * with a key this one lacks, during a change of COURIER_SECRETS_KEY) is left out with its expiry:
 * the current one still signs, and receivers switch to it within the grace period anyway. The
 * current one is thrown for: without it nothing can be signed as the owner expects.
 */
function openSecrets(db: Queryable, row: ConfigRow): { row: ConfigRow; errors: unknown[] } {
  const keys: string[] = [];
  const expiry: (Date | null)[] = [];
  const errors: unknown[] = [];
  row.secret_keys.forEach((sealed, i) => {
    const expiresAt = row.secret_expiry[i] ?? null;
    try {
      keys.push(openSecret(db, sealed));
      expiry.push(expiresAt);
    } catch (error) {
      if (expiresAt === null) throw error;
      errors.push(error);
    }
  });
  return { row: { ...row, secret_keys: keys, secret_expiry: expiry }, errors };
}

function toConfig(row: ConfigRow): EndpointConfig {
  const secrets = row.secret_keys.map((key, i) => ({ key, expiresAt: toMs(row.secret_expiry[i] ?? null) }));
  return {
    version: `${row.endpoint_version}.${row.app_version}`,
    url: row.url,
    headers: row.headers ?? {},
    endpointPolicy: row.endpoint_policy,
    appPolicy: row.app_policy,
    secretsAt: (now) => secrets.filter((s) => s.expiresAt === null || s.expiresAt > now).map((s) => s.key),
    maxInFlight: row.max_in_flight,
    publicOnly: row.public_only,
  };
}
