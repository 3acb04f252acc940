/** Path parameters to rows: an id or a uid (a message: its id or eventId); unknown → 404 JSON. */
import type { Queryable } from '../store/db.ts';
import { type Application, findApplication } from '../store/repos/applications.ts';
import { type Endpoint, findEndpoint } from '../store/repos/endpoints.ts';
import { findMessage, type Message } from '../store/repos/messages.ts';
import { notFound } from './errors.ts';

export async function requireApp(db: Queryable, idOrUid: string): Promise<Application> {
  const app = await findApplication(db, idOrUid);
  if (!app) throw notFound(`Application ${idOrUid} not found`);
  return app;
}

export async function requireEndpointOf(db: Queryable, app: Application, idOrUid: string): Promise<Endpoint> {
  const endpoint = await findEndpoint(db, app.id, idOrUid);
  if (!endpoint) throw notFound(`Endpoint ${idOrUid} not found`);
  return endpoint;
}

/** The application and its endpoint named by a path's app_id and endpoint_id. */
export async function requireEndpoint(
  db: Queryable,
  appIdOrUid: string,
  idOrUid: string,
): Promise<{ app: Application; endpoint: Endpoint }> {
  const app = await requireApp(db, appIdOrUid);
  return { app, endpoint: await requireEndpointOf(db, app, idOrUid) };
}

export async function requireMessage(
  db: Queryable,
  app: Application,
  idOrEventId: string,
  withPayload = true,
): Promise<Message> {
  const message = await findMessage(db, app.id, idOrEventId, withPayload);
  if (!message) throw notFound(`Message ${idOrEventId} not found`);
  return message;
}
