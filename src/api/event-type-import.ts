/**
 * Event types read from an OpenAPI document's webhooks (Svix's import): pure, no storage. Each
 * webhook (3.1's `webhooks`, or the `x-webhooks` extension earlier versions used) is an event
 * type named by its key, described by its operation, with its JSON request body's schema as
 * version "1" and the body's examples in that schema's `examples` (what send-example sends).
 */
import { parse } from 'yaml';
import { createError } from './errors.ts';
import { jsonProblem, MAX_JSON_DEPTH } from './json-checks.ts';
import { NEW_EVENT_TYPE_NAME } from './schemas/common.ts';

export const invalidSpec = createError('invalid_spec', 'The OpenAPI document cannot be imported', 400);

/** Svix's EventTypeFromOpenApi; the feature flags and group are read and, as on create, not kept. */
export interface EventTypeFromOpenApi {
  name: string;
  description: string;
  deprecated: boolean;
  schemas: Record<string, unknown> | null;
  featureFlag: string | null;
  featureFlags: string[] | null;
  groupName: string | null;
}

type Json = Record<string, unknown>;
const NAME = new RegExp(NEW_EVENT_TYPE_NAME);
const METHODS = ['post', 'put', 'patch', 'get', 'delete', 'head', 'options', 'trace'] as const;
const MAX_DESCRIPTION = 4096;
const MAX_REF_HOPS = 32;
/** Webhooks one import takes: each is a locked read and a write in one transaction. */
export const MAX_WEBHOOKS = 1000;
/** What inlining may make, in nodes plus string characters: shared references multiply. */
const MAX_INLINED = 4_000_000;
// A NUL escaped by JSON.stringify, not a backslash followed by the text u0000.
const ESCAPED_NUL = /(?<!\\)(?:\\\\)*\\u0000/;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v.trim() : null);

const FLAG = /^[a-zA-Z0-9\-_.]{1,256}$/;
/** As many as an event type takes through the API (an export must import again). */
const MAX_FLAGS = 100;

/** x-svix-feature-flags, else [x-svix-feature-flag]; null: none. A flag no token could hold is an error. */
function featureFlagsOf(name: string, list: unknown, single: string | null): string[] | null {
  if (list != null && !Array.isArray(list))
    throw invalidSpec(`Webhook ${name}'s x-svix-feature-flags is not a list`);
  const listed: unknown[] = Array.isArray(list) ? list : [];
  const flags = [...new Set(listed.length > 0 ? listed : single ? [single] : [])];
  if (flags.length > MAX_FLAGS) throw invalidSpec(`Webhook ${name} has more than ${MAX_FLAGS} feature flags`);
  const bad = flags.find((f) => typeof f !== 'string' || !FLAG.test(f));
  if (bad !== undefined)
    throw invalidSpec(
      `Webhook ${name}'s feature flag ${JSON.stringify(bad)} is not a feature flag name (^[a-zA-Z0-9-_.]{1,256}$)`,
    );
  return flags.length > 0 ? (flags as string[]) : null;
}

/** `specRaw`: YAML, or JSON (which YAML reads too); aliases are bounded, as the yaml package does. */
export function parseSpecRaw(raw: string): unknown {
  try {
    return parse(raw, { maxAliasCount: 100, logLevel: 'error' });
  } catch (error) {
    throw invalidSpec(`specRaw is neither YAML nor JSON: ${(error as Error).message.split('\n')[0]}`);
  }
}

/**
 * What the API refuses in a JSON body, checked again for a document read from YAML (an alias
 * may even make it circular: too deep), and what PostgreSQL's jsonb and text refuse (NUL).
 */
function checkDocument(spec: unknown): void {
  const problem = jsonProblem(spec)?.replace(/^Body/, 'The document');
  if (problem) throw invalidSpec(problem);
  if (ESCAPED_NUL.test(JSON.stringify(spec)))
    throw invalidSpec('The document contains a NUL character (\\u0000)');
}

/** The document's event types, in its order; a document without webhooks is refused. */
export function eventTypesFromOpenApi(spec: unknown): EventTypeFromOpenApi[] {
  if (!isObject(spec)) throw invalidSpec('The OpenAPI document must be an object');
  checkDocument(spec);
  const webhooks = spec.webhooks ?? spec['x-webhooks'];
  if (!isObject(webhooks) || Object.keys(webhooks).length === 0) {
    throw invalidSpec('The OpenAPI document has no webhooks (its webhooks or x-webhooks section)');
  }
  if (Object.keys(webhooks).length > MAX_WEBHOOKS) {
    throw invalidSpec(`The document has more than ${MAX_WEBHOOKS} webhooks: import it in parts`);
  }
  const refs = new Resolver(spec);
  return Object.entries(webhooks).map(([name, item]) => {
    if (!NAME.test(name)) {
      throw invalidSpec(`Webhook ${JSON.stringify(name)} is not an event type name (letters, digits, - _ .)`);
    }
    const pathItem = refs.follow(item);
    const method = METHODS.find((m) => pathItem?.[m] !== undefined);
    const operation = method === undefined ? null : refs.follow(pathItem![method]);
    if (!operation) throw invalidSpec(`Webhook ${name} has no operation (post, …)`);
    const schema = requestSchema(refs, operation);
    const description =
      text(operation.description) ??
      text(operation.summary) ??
      text(pathItem?.description) ??
      text(pathItem?.summary);
    if ((description?.length ?? 0) > MAX_DESCRIPTION) {
      throw invalidSpec(`Webhook ${name}'s description is longer than ${MAX_DESCRIPTION} characters`);
    }
    const flag = text(operation['x-svix-feature-flag']);
    const flags = featureFlagsOf(name, operation['x-svix-feature-flags'], flag);
    return {
      name,
      description: description ?? '',
      deprecated: operation.deprecated === true,
      schemas: schema === null ? null : { '1': schema },
      featureFlag: flags?.[0] ?? null,
      featureFlags: flags,
      groupName: text(operation['x-svix-group-name']),
    };
  });
}

/** The JSON request body's schema, its local references inlined, with the body's examples. */
function requestSchema(refs: Resolver, operation: Json): Json | null {
  const body = refs.follow(operation.requestBody);
  const content = isObject(body?.content) ? body.content : {};
  const type = Object.keys(content).find((t) => /^application\/([\w.+-]*\+)?json\b/i.test(t));
  const media = type === undefined ? null : refs.follow(content[type]);
  if (!media) return null;
  const schema = refs.inline(media.schema);
  const examples = [
    ...('example' in media ? [media.example] : []),
    ...Object.values(isObject(media.examples) ? media.examples : {})
      .map((e) => refs.follow(e))
      .filter((e): e is Json => isObject(e) && 'value' in e)
      .map((e) => e.value),
  ];
  const base = isObject(schema) ? schema : {};
  if (examples.length === 0 || Array.isArray(base.examples)) return isObject(schema) ? schema : null;
  return { ...base, examples };
}

/** Local references (`#/components/…`) of the document; others are refused. */
class Resolver {
  /** What inlining may still make: shared references multiply (A names B twice, B names C twice…). */
  private budget = MAX_INLINED;

  constructor(private readonly spec: Json) {}

  /** The object a reference names (one level; a Path Item or Media Type may be one). */
  follow(value: unknown, seen = new Set<string>()): Json | null {
    if (!isObject(value)) return null;
    if (typeof value.$ref !== 'string') return value;
    if (seen.has(value.$ref)) throw invalidSpec(`Reference ${value.$ref} refers to itself`);
    if (seen.size >= MAX_REF_HOPS) throw invalidSpec(`Reference ${value.$ref} is one of a chain too long`);
    return this.follow(this.target(value.$ref), seen.add(value.$ref));
  }

  /**
   * A schema with every reference replaced by what it names; a schema that contains itself
   * (a tree, a linked list) keeps that inner reference as `{}`, any value, with a note.
   */
  inline(value: unknown, stack: string[] = [], depth = 0): unknown {
    this.budget -= 1 + (typeof value === 'string' ? value.length : 0);
    if (this.budget < 0) throw invalidSpec('A schema is too large once its references are inlined');
    if (depth > MAX_JSON_DEPTH) {
      throw invalidSpec(
        `A schema is nested deeper than ${MAX_JSON_DEPTH} levels once its references are inlined`,
      );
    }
    if (Array.isArray(value)) return value.map((v) => this.inline(v, stack, depth + 1));
    if (!isObject(value)) return value;
    if (typeof value.$ref === 'string') {
      const ref = value.$ref;
      if (stack.includes(ref)) return { description: `recursive: ${ref}` };
      // A reference counts as a level: a long chain of them is as deep as long nesting.
      return this.inline(this.target(ref), [...stack, ref], depth + 1);
    }
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => {
        this.budget -= k.length;
        return [k, this.inline(v, stack, depth + 1)];
      }),
    );
  }

  private target(ref: string): unknown {
    if (!ref.startsWith('#/')) throw invalidSpec(`Reference ${ref} is not local to the document (#/…)`);
    let node: unknown = this.spec;
    for (const raw of ref.slice(2).split('/')) {
      let key: string;
      try {
        key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      } catch {
        throw invalidSpec(`Reference ${ref} is not a well-formed JSON pointer`);
      }
      const container = isObject(node) || Array.isArray(node) ? (node as Json) : null;
      node = container && Object.hasOwn(container, key) ? container[key] : undefined;
      if (node === undefined) throw invalidSpec(`Reference ${ref} names nothing in the document`);
    }
    return node;
  }
}
