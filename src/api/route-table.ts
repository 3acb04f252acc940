import type { FastifySchema, RouteOptions } from 'fastify';

export interface RouteRecord {
  method: string;
  /** Fastify's pattern, e.g. /api/v1/app/:app_id */
  url: string;
  schema: FastifySchema | undefined;
  /** Served without a token (health, OpenAPI document, reference page). */
  public: boolean;
}

/** Every route registered, for the OpenAPI document, 405 answers and the authentication tests. */
export class RouteTable {
  readonly routes: RouteRecord[] = [];
  private readonly patterns: { method: string; regex: RegExp }[] = [];

  add(options: RouteOptions): void {
    const methods = Array.isArray(options.method) ? options.method : [options.method];
    for (const method of methods) {
      const config = options.config as { public?: boolean } | undefined;
      this.routes.push({ method, url: options.url, schema: options.schema, public: config?.public === true });
      const source = options.url
        .split('/')
        .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('/');
      this.patterns.push({ method, regex: new RegExp(`^${source}/?$`) });
    }
  }

  /** The methods some route serves at this concrete path. */
  methodsFor(path: string): string[] {
    return [...new Set(this.patterns.filter((p) => p.regex.test(path)).map((p) => p.method))];
  }
}
