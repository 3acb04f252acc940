import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eagerSerializers } from '../../src/api/serializers.ts';
import { routesOf } from '../../src/api/server.ts';
import { compileSchema } from '../../src/api/validation.ts';
import { startApi, type TestApi } from './support.ts';

type Json = Record<string, unknown>;

describe('OpenAPI document and reference page', () => {
  let api: TestApi;
  let doc: Json & { paths: Record<string, Record<string, Json>>; components: { schemas: Json } };
  beforeAll(async () => {
    api = await startApi();
    doc = (await api.request('GET', '/openapi.json', { token: null })).body;
  });
  afterAll(() => api.close());

  // The server compiles them on first use (validation.ts, serializers.ts): a schema Ajv or
  // fast-json-stringify refuses must fail here, not on some route's first request.
  it("compiles every route's request validators and response serializers", () => {
    const serializers = eagerSerializers(undefined, {});
    let compiled = 0;
    for (const { method, url, schema } of routesOf(api.app)) {
      const parts = {
        body: schema?.body,
        querystring: schema?.querystring,
        params: schema?.params,
        headers: schema?.headers,
      };
      for (const [part, s] of Object.entries(parts)) {
        if (s === undefined) continue;
        expect(() => compileSchema(s as object, part), `${method} ${url} ${part}`).not.toThrow();
        compiled++;
      }
      for (const [httpStatus, s] of Object.entries((schema?.response ?? {}) as Record<string, unknown>)) {
        expect(
          () => serializers({ schema: s, method, url, httpStatus }),
          `${method} ${url} ${httpStatus}`,
        ).not.toThrow();
        compiled++;
      }
    }
    expect(compiled).toBeGreaterThan(100);
  });

  it('documents every route with its parameters, body and responses', () => {
    expect(doc.openapi).toBe('3.1.0');
    const routes = routesOf(api.app).filter((r) => r.method !== 'HEAD');
    for (const route of routes) {
      const path = route.url.replace(/:(\w+)/g, '{$1}');
      const op = doc.paths[path]?.[route.method.toLowerCase()] as Json | undefined;
      expect(op, `${route.method} ${route.url}`).toBeDefined();
      const pathParams = (route.url.match(/:(\w+)/g) ?? []).map((p) => p.slice(1));
      const documented = (op!.parameters as { name: string; in: string }[]).filter((p) => p.in === 'path');
      expect(documented.map((p) => p.name).sort()).toEqual(pathParams.sort());
      expect(Object.keys(op!.responses as Json).length).toBeGreaterThan(0);
      expect(op!.security).toEqual(route.public ? [] : [{ HTTPBearer: [] }]);
      expect(op!.summary).toEqual(expect.any(String));
    }
    const count = Object.values(doc.paths).reduce((n, item) => n + Object.keys(item).length, 0);
    expect(count).toBe(routes.length);

    const create = doc.paths['/api/v1/app/{app_id}/msg']!.post!;
    expect(create.requestBody).toMatchObject({
      required: true,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/MessageIn' } } },
    });
    expect(Object.keys(create.responses as Json).sort()).toEqual([
      '202',
      '400',
      '401',
      '404',
      '413',
      '415',
      '422',
      '503',
    ]);
    const list = doc.paths['/api/v1/app']!.get!;
    expect((list.parameters as { name: string }[]).map((p) => p.name)).toEqual([
      'limit',
      'iterator',
      'order',
      'exclude_apps_with_no_endpoints',
      'exclude_apps_with_disabled_endpoints',
      'exclude_apps_with_svix_play_endpoints',
    ]);
  });

  it('marks Courier extensions and resolves every $ref', () => {
    const text = JSON.stringify(doc);
    for (const [, name] of text.matchAll(/"#\/components\/schemas\/([^"]+)"/g)) {
      expect(doc.components.schemas, name).toHaveProperty(name!);
    }
    const pause = doc.paths['/api/v1/app/{app_id}/endpoint/{endpoint_id}/pause']!.post!;
    expect(pause.description).toMatch(/Courier extension/);
    expect(JSON.stringify(doc.components.schemas.EndpointOut)).toMatch(/Courier extension/);
  });

  it('serves a self-contained page that renders the document', async () => {
    const page = await api.request('GET', '/docs', { token: null });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.text).toContain("fetch('/openapi.json')");
    // Nothing from elsewhere: no external script, style, font or image.
    expect(page.text).not.toMatch(/(src|href)=["']?(https?:)?\/\//);
    expect(page.text).not.toMatch(/@import|url\(/);
    const script = /<script>([\s\S]*)<\/script>/.exec(page.text)![1]!;
    expect(() => new Function(script)).not.toThrow();
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain(`'sha256-${createHash('sha256').update(script).digest('base64')}'`);
  });
});

/** Just enough DOM to run the page's script in Node and read what it rendered. */
class FakeElement {
  readonly children: (FakeElement | string)[] = [];
  readonly attributes: Record<string, string> = {};
  className = '';
  textContent = '';
  constructor(readonly tag: string) {}
  setAttribute(name: string, value: string) {
    this.attributes[name] = value;
  }
  append(...kids: (FakeElement | string)[]) {
    this.children.push(...kids);
  }
  text(): string {
    return this.textContent + this.children.map((c) => (typeof c === 'string' ? c : c.text())).join(' ');
  }
  all(tag: string): FakeElement[] {
    const mine = this.children.filter((c): c is FakeElement => typeof c !== 'string');
    return [...mine.filter((c) => c.tag === tag), ...mine.flatMap((c) => c.all(tag))];
  }
}

describe('reference page script', () => {
  it('renders every operation of the document, with parameters and schemas', async () => {
    const api = await startApi();
    try {
      const page = await api.request('GET', '/docs', { token: null });
      const doc = (await api.request('GET', '/openapi.json', { token: null })).body;
      const script = /<script>([\s\S]*)<\/script>/.exec(page.text)![1]!;
      const byId: Record<string, FakeElement> = {};
      for (const id of ['title', 'intro', 'nav', 'ops']) byId[id] = new FakeElement('div');
      const document = {
        createElement: (tag: string) => new FakeElement(tag),
        getElementById: (id: string) => byId[id],
      };
      const fetch = async (url: string) => ({ json: async () => (url === '/openapi.json' ? doc : null) });
      new Function('document', 'Node', 'fetch', script)(document, FakeElement, fetch);
      await new Promise((resolve) => setTimeout(resolve, 50));

      const sections = byId.ops!.all('section');
      const operations = Object.values(
        doc.paths as Record<string, Record<string, { operationId: string }>>,
      ).flatMap((item) => Object.values(item).map((op) => op.operationId));
      expect(sections.map((s) => s.attributes.id).sort()).toEqual(operations.sort());
      const create = sections.find(
        (s) => s.attributes.id === doc.paths['/api/v1/app/{app_id}/msg'].post.operationId,
      )!;
      const text = create.text();
      for (const fragment of [
        'POST',
        '/api/v1/app/{app_id}/msg',
        'app_id',
        'eventType',
        'payload',
        'MessageIn',
        '202',
        '422',
      ]) {
        expect(text, fragment).toContain(fragment);
      }
      expect(byId.title!.textContent).toContain('Courier API');
    } finally {
      await api.close();
    }
  });
});

describe('health', () => {
  it('answers /health and /health/ready with 204', async () => {
    const api = await startApi();
    try {
      for (const path of ['/health', '/health/ready', '/api/v1/health']) {
        const res = await api.request('GET', path, { token: null });
        expect(res.status, path).toBe(204);
        expect(res.text).toBe('');
      }
    } finally {
      await api.close();
    }
  });
});
