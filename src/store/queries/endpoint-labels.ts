import type { Queryable } from '../db.ts';

/** What courier_endpoint_info tells of an endpoint: its uid and its application's id and uid. */
export interface EndpointLabels {
  id: string;
  uid: string | null;
  appId: string;
  appUid: string | null;
}

/**
 * The endpoints among `ids` not deleted (deleting an application deletes its endpoints), with their
 * application. By primary key: `ids` are the endpoints a process names in its attempt series, at
 * most COURIER_METRICS_ENDPOINTS (2,000).
 */
export async function endpointLabels(q: Queryable, ids: readonly string[]): Promise<EndpointLabels[]> {
  const { rows } = await q.query<EndpointLabels>(
    `select e.id, e.uid, e.app_id as "appId", a.uid as "appUid"
       from courier_endpoints e join courier_applications a on a.id = e.app_id
      where e.id = any($1::text[]) and e.deleted_at is null`,
    [ids],
  );
  return rows;
}
