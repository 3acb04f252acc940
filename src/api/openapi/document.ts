/**
 * The OpenAPI 3.1 document, generated from the route schemas (so it cannot drift from what is
 * validated). Schemas carrying a `title` become components referenced by `$ref`.
 */
import type { FastifySchema } from 'fastify';
import type { RouteRecord } from '../route-table.ts';
import { HttpError, ValidationError } from '../schemas/common.ts';

type Json = Record<string, unknown>;

const COURIER_DESCRIPTION =
  'Courier serves the Svix API v1 (the subset Svix OSS implements), so the official Svix SDKs work against it. ' +
  'Operations and fields marked "Courier extension" are Courier\'s own. Every route except health, this document and ' +
  '/docs needs `Authorization: Bearer <token>`. Errors are JSON `{code, detail}`; 422 lists `{loc, msg, type}` per field. ' +
  'Every POST honours an `idempotency-key` header (the first response is replayed for 24 hours).';

class Components {
  readonly schemas: Json = {};

  /** A JSON Schema with titled sub-schemas replaced by references. */
  convert(node: unknown, isComponent = false): unknown {
    if (Array.isArray(node)) return node.map((n) => this.convert(n));
    if (node === null || typeof node !== 'object') return node;
    const obj = node as Json;
    if (!isComponent && typeof obj.title === 'string') {
      const name = obj.title;
      if (!(name in this.schemas)) {
        this.schemas[name] = {}; // placeholder first: a schema may refer to itself
        this.schemas[name] = this.convert(obj, true);
      }
      return { $ref: `#/components/schemas/${name}` };
    }
    return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, this.convert(v)]));
  }
}

function parameters(schema: unknown, location: 'path' | 'query', c: Components): Json[] {
  const obj = schema as { properties?: Record<string, Json>; required?: string[] } | undefined;
  return Object.entries(obj?.properties ?? {}).map(([name, prop]) => {
    const { description, ...rest } = prop;
    return {
      name,
      in: location,
      required: location === 'path' || (obj?.required ?? []).includes(name),
      ...(description ? { description } : {}),
      schema: c.convert(rest),
    };
  });
}

const STATUS_TEXT: Record<string, string> = {
  '200': 'OK',
  '201': 'Created',
  '202': 'Accepted',
  '503': 'Database unavailable',
};

const json = (schema: unknown) => ({ content: { 'application/json': { schema } } });

function responses(route: RouteRecord, c: Components): Json {
  const out: Json = {};
  const declared = (route.schema?.response ?? {}) as Record<string, Json>;
  for (const [status, schema] of Object.entries(declared)) {
    // A declared schema may carry its own description (e.g. the 503 of /health/ready).
    const description =
      typeof schema.description === 'string' ? schema.description : (STATUS_TEXT[status] ?? 'OK');
    out[status] =
      schema.type === 'null' ? { description: 'No content' } : { description, ...json(c.convert(schema)) };
  }
  const error = c.convert(HttpError);
  const add = (status: string, description: string, schema = error) => {
    out[status] ??= { description, ...json(schema) };
  };
  const s = route.schema ?? {};
  if (s.body) {
    add('400', 'Malformed JSON');
    add('413', 'Body larger than COURIER_MAX_PAYLOAD');
    add('415', 'Body is not application/json');
  }
  if (!route.public) add('401', 'Missing or invalid token');
  if (s.params) add('404', 'Not found');
  if (s.body || s.params || s.querystring) add('422', 'Validation error', c.convert(ValidationError));
  add('503', 'Database unavailable');
  return out;
}

function operation(route: RouteRecord, c: Components): Json {
  const s: FastifySchema = route.schema ?? {};
  const body = s.body as Json | undefined;
  const nullableBody = Array.isArray(body?.type) && (body.type as string[]).includes('null');
  return {
    operationId: s.operationId ?? `${route.method.toLowerCase()}${route.url.replace(/[/:{}-]+/g, '_')}`,
    ...(s.summary ? { summary: s.summary } : {}),
    ...(s.description ? { description: s.description } : {}),
    tags: s.tags ?? ['Other'],
    parameters: [...parameters(s.params, 'path', c), ...parameters(s.querystring, 'query', c)],
    ...(body ? { requestBody: { required: !nullableBody, ...json(c.convert(body)) } } : {}),
    responses: responses(route, c),
    security: route.public ? [] : [{ HTTPBearer: [] }],
  };
}

export function openApiDocument(routes: readonly RouteRecord[], version: string): Json {
  const c = new Components();
  const paths: Record<string, Json> = {};
  for (const route of routes) {
    if (route.method === 'HEAD' || route.method === 'OPTIONS') continue;
    const path = route.url.replace(/:(\w+)/g, '{$1}');
    paths[path] ??= {};
    paths[path][route.method.toLowerCase()] = operation(route, c);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Courier API',
      version,
      description: COURIER_DESCRIPTION,
      license: { name: 'Apache-2.0' },
    },
    paths,
    components: {
      schemas: c.schemas,
      securitySchemes: { HTTPBearer: { type: 'http', scheme: 'bearer' } },
    },
  };
}
