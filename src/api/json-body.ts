/**
 * JSON request bodies: Fastify's parser (which refuses `__proto__` and `constructor.prototype`
 * keys), then json-checks.ts for what the rest of Courier cannot hold; each is a 400 `invalid_json`,
 * like any other body that is not JSON.
 */
import { ApiError } from './errors.ts';
import { parsedJsonProblem } from './json-checks.ts';
import type { Api } from './types.ts';

// ignoreBOM keeps a leading BOM for Fastify's parser, which skips one (as before).
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const invalidJson = (detail: string) => new ApiError(400, 'invalid_json', detail);

export function registerJsonBody(app: Api): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    let text: string;
    try {
      text = utf8.decode(body as Buffer);
    } catch {
      done(invalidJson('Body is not valid UTF-8'), undefined);
      return;
    }
    parse(request, text, (error, value) => {
      if (error) {
        done(error, undefined);
        return;
      }
      const problem = parsedJsonProblem(text, value);
      if (problem) {
        done(invalidJson(problem), undefined);
        return;
      }
      done(null, value);
    });
  });
}
