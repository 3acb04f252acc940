import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from './support.ts';

/** Every method and path the official svix SDK calls, read from its compiled resources. */
function sdkRoutes(): { method: string; path: string }[] {
  const dir = join(dirname(createRequire(import.meta.url).resolve('svix')), 'api');
  const routes = new Map<string, { method: string; path: string }>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.js'))) {
    const source = readFileSync(join(dir, file), 'utf8');
    for (const [, method, path] of source.matchAll(/HttpMethod\.([A-Z]+), "(\/api\/v1[^"]*)"/g)) {
      routes.set(`${method} ${path}`, { method: method!, path: path! });
    }
  }
  return [...routes.values()];
}

describe('the svix SDK surface', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startApi();
  });
  afterAll(async () => {
    await api.close();
  });

  it('is served, or answered 501 not_implemented: never a 404 or 405 for want of a route', async () => {
    const routes = sdkRoutes();
    expect(routes.length).toBeGreaterThan(100);
    const unserved: string[] = [];
    let notImplemented = 0;
    for (const { method, path } of routes) {
      const concrete = path.replace(/\{[a-z_]+\}/g, 'x_unknown');
      const res = await api.request(
        method,
        concrete,
        method === 'GET' || method === 'DELETE' ? {} : { body: {} },
      );
      if (res.status === 501) {
        expect(res.body).toMatchObject({
          code: 'not_implemented',
          detail: expect.stringContaining('Courier does not implement'),
        });
        notImplemented++;
      } else if (
        res.status === 405 ||
        (res.status === 404 && String(res.body?.detail).startsWith('No route'))
      ) {
        unserved.push(`${method} ${path}: ${res.status}`);
      }
    }
    expect(unserved).toEqual([]);
    expect(notImplemented).toBeGreaterThan(0);
  });
});
