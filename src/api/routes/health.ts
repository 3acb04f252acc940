import { databaseUnavailable } from '../errors.ts';
import { HttpError, NoContent } from '../schemas/common.ts';
import type { Api, ApiDeps } from '../types.ts';

const tags = ['Health'];

export function healthRoutes(app: Api, deps: ApiDeps): void {
  app.get(
    '/api/v1/health',
    {
      config: { public: true },
      schema: { tags, summary: 'Liveness (Svix path)', response: { 204: NoContent } },
    },
    async (_request, reply) => reply.code(204).send(),
  );

  app.get(
    '/health',
    {
      config: { public: true },
      schema: { tags, summary: 'Liveness: the process answers', response: { 204: NoContent } },
    },
    async (_request, reply) => reply.code(204).send(),
  );

  app.get(
    '/health/ready',
    {
      config: { public: true },
      schema: {
        tags,
        summary: 'Readiness: the database answers',
        response: { 204: NoContent, 503: HttpError },
      },
    },
    async (_request, reply) => {
      try {
        await deps.db.query('select 1');
      } catch {
        throw databaseUnavailable('The database does not answer');
      }
      return reply.code(204).send();
    },
  );
}
