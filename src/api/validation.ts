/**
 * Request validation with Ajv. Bodies are JSON and validated strictly (no type coercion: `"5"` is
 * not a number); path and query values are strings, so they are coerced ("5" → 5, "true" → true,
 * a single value → a one-item array). Unknown fields are ignored, as the Svix SDKs send extras.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchema, FastifySchemaCompiler } from 'fastify';
import { isValidUid } from '../ids.ts';

export interface ValidationItem {
  loc: string[];
  msg: string;
  type: string;
}

/** The instants a date-time may name: years 1 to 9999, in UTC. */
const FIRST_INSTANT = Date.parse('0001-01-01T00:00:00Z');
const LAST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');

function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    strict: false,
    useDefaults: true,
    coerceTypes: coerce ? 'array' : false,
  });
  addFormats.default(ajv, ['date-time', 'uri']);
  // RFC 3339 allows a leap second (23:59:60) that Date.parse cannot read: handlers would get NaN.
  // Its offsets can move years 0001 and 9999 to 0 or 10000, which PostgreSQL refuses or misreads.
  const dateTime = ajv.formats['date-time'] as { validate: (s: string) => boolean };
  ajv.addFormat('date-time', {
    ...dateTime,
    type: 'string',
    validate: (s: string) => {
      const at = Date.parse(s);
      return dateTime.validate(s) && at >= FIRST_INSTANT && at <= LAST_INSTANT;
    },
  });
  ajv.addFormat('uid', { type: 'string', validate: isValidUid });
  return ajv;
}

const strictAjv = makeAjv(false);
const coercingAjv = makeAjv(true);

/** A request part's validator, compiled now: the body strictly, path, query and headers coerced. */
export function compileSchema(schema: object, httpPart: string | undefined): ValidateFunction {
  return (httpPart === 'body' ? strictAjv : coercingAjv).compile(schema);
}

/**
 * Compiled on a route's first request, not when the server starts: compiling every route's schemas
 * at once took about 35 MB of short-lived allocations, which V8 kept as heap (and the process as
 * RSS) for good, though most deployments call a handful of the routes. The OpenAPI test compiles
 * them all, so a schema Ajv refuses fails there, not on a first request.
 */
export const compileValidator: FastifySchemaCompiler<FastifySchema> = ({ schema, httpPart }) => {
  let compiled: ValidateFunction | undefined;
  // The context carries the request as parent, which Ajv needs to coerce a root value in place.
  const validate = (data: unknown, context?: Parameters<ValidateFunction>[1]): boolean => {
    compiled ??= compileSchema(schema as object, httpPart);
    const valid = compiled(data, context) as boolean;
    validate.errors = compiled.errors;
    return valid;
  };
  validate.errors = null as ValidateFunction['errors'];
  // Fastify passes that context only to a function with a schemaEnv, as Ajv's own have.
  validate.schemaEnv = true;
  return validate;
};

const PART_NAMES: Record<string, string> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

function message(e: ErrorObject): string {
  // An error about a key (propertyNames) rather than its value.
  if (e.propertyName !== undefined) return `key ${JSON.stringify(e.propertyName)} ${valueMessage(e)}`;
  return valueMessage(e);
}

function valueMessage(e: ErrorObject): string {
  if (e.keyword === 'format' && e.params.format === 'uid') {
    return 'must be 1-256 characters of a-z A-Z 0-9 - _ . and must not start with an id prefix (app_, ep_, msg_, …)';
  }
  if (e.keyword === 'enum') return `must be one of: ${(e.params.allowedValues as unknown[]).join(', ')}`;
  if (e.keyword === 'pattern') return `must match ${e.params.pattern as string}`;
  if (e.keyword === 'type') return `must be ${String(e.params.type).replace(',', ' or ')}`;
  if (e.keyword === 'additionalProperties') return 'is not a field here';
  return e.message ?? 'is invalid';
}

function typeOf(e: ErrorObject): string {
  if (e.keyword === 'required') return 'value_error.missing';
  if (e.keyword === 'type') return 'type_error';
  return 'value_error';
}

/** Ajv errors as Svix's `[{loc, msg, type}]`, one per field (the first error for each). */
export function validationItems(errors: readonly ErrorObject[], context = 'body'): ValidationItem[] {
  const part = PART_NAMES[context] ?? context;
  const seen = new Set<string>();
  const items: ValidationItem[] = [];
  // anyOf reports each branch and then itself; the branches say more.
  const specific = errors.filter((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf');
  for (const e of specific.length > 0 ? specific : errors) {
    const path = e.instancePath
      .split('/')
      .slice(1)
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    if (e.keyword === 'required') path.push(String(e.params.missingProperty));
    // Named, not "must NOT have additional properties" on the object holding it.
    if (e.keyword === 'additionalProperties') path.push(String(e.params.additionalProperty));
    const loc = [part, ...path];
    const key = JSON.stringify(loc);
    if (seen.has(key)) continue;
    seen.add(key);
    items.push({ loc, msg: message(e), type: typeOf(e) });
  }
  return items;
}
