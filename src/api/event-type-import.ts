/**
 * Event types read from an OpenAPI document's webhooks (Svix's import): pure, no storage. Each
 * webhook (3.1's `webhooks`, or the `x-webhooks` extension earlier versions used) is an event
 * type named by its key, described by its operation, with its JSON request body's schema as
 * version "1" and the body's examples in that schema's `examples` (what send-example sends).
 */
import { parse } from 'yaml';
import { createError } from './errors.ts';
import { NEW_EVENT_TYPE_NAME } from './schemas/common.ts';

export const invalidSpec = createError('invalid_spec', 'The OpenAPI document cannot be imported', 400);

/** Svix's EventTypeFromOpenApi; featureFlag and groupName are read and, as on create, not kept. */
export interface EventTypeFromOpenApi {
  name: string;
  description: string;
  deprecated: boolean;
  schemas: Record<string, unknown> | null;
  featureFlag: string | null;
  groupName: string | null;
}

type Json = Record<string, unknown>;
const NAME = new RegExp(NEW_EVENT_TYPE_NAME);
const METHODS = ['post', 'put', 'patch', 'get', 'delete', 'head', 'options', 'trace'] as const;
const MAX_DESCRIPTION = 4096;
const MAX_INLINED_NODES = 200_000;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v.trim() : null);

/** `specRaw`: YAML, or JSON (which YAML reads too). */
export function parseSpecRaw(raw: string): unknown {
  try {
    return parse(raw, { maxAliasCount: 100 });
  } catch (error) {
    throw invalidSpec(`specRaw is neither YAML nor JSON: ${(error as Error).message.split('\n')[0]}`);
  }
}

/** The document's event types, in its order; a document without webhooks is refused. */
export function eventTypesFromOpenApi(spec: unknown): EventTypeFromOpenApi[] {
  if (!isObject(spec)) throw invalidSpec('The OpenAPI document must be an object');
  const webhooks = spec.webhooks ?? spec['x-webhooks'];
  if (!isObject(webhooks) || Object.keys(webhooks).length === 0) {
    throw invalidSpec('The OpenAPI document has no webhooks (its webhooks or x-webhooks section)');
  }
  const refs = new Resolver(spec);
  return Object.entries(webhooks).map(([name, item]) => {
    if (!NAME.test(name)) {
      throw invalidSpec(`Webhook ${JSON.stringify(name)} is not an event type name (letters, digits, - _ .)`);
    }
    const pathItem = refs.follow(item);
    const operation = METHODS.map((m) => refs.follow(pathItem?.[m])).find(isObject);
    if (!operation) throw invalidSpec(`Webhook ${name} has no operation (post, …)`);
    const schema = requestSchema(refs, operation);
    const description =
      text(operation.description) ??
      text(operation.summary) ??
      text(pathItem?.description) ??
      text(pathItem?.summary);
    return {
      name,
      description: (description ?? '').slice(0, MAX_DESCRIPTION),
      deprecated: operation.deprecated === true,
      schemas: schema === null ? null : { '1': schema },
      featureFlag: text(operation['x-svix-feature-flag']),
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
  /** Nodes inlining may still make: shared references multiply (A names B twice, B names C twice…). */
  private budget = MAX_INLINED_NODES;

  constructor(private readonly spec: Json) {}

  /** The object a reference names (one level; a Path Item or Media Type may be one). */
  follow(value: unknown, seen = new Set<string>()): Json | null {
    if (!isObject(value)) return null;
    if (typeof value.$ref !== 'string') return value;
    if (seen.has(value.$ref)) throw invalidSpec(`Reference ${value.$ref} refers to itself`);
    return this.follow(this.target(value.$ref), seen.add(value.$ref));
  }

  /**
   * A schema with every reference replaced by what it names; a schema that contains itself
   * (a tree, a linked list) keeps that inner reference as `{}`, any value, with a note.
   */
  inline(value: unknown, stack: string[] = []): unknown {
    if (--this.budget < 0) {
      throw invalidSpec(
        `The schemas are too large once their references are inlined (${MAX_INLINED_NODES} nodes)`,
      );
    }
    if (Array.isArray(value)) return value.map((v) => this.inline(v, stack));
    if (!isObject(value)) return value;
    if (typeof value.$ref === 'string') {
      const ref = value.$ref;
      if (stack.includes(ref)) return { description: `recursive: ${ref}` };
      return this.inline(this.target(ref), [...stack, ref]);
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.inline(v, stack)]));
  }

  private target(ref: string): unknown {
    if (!ref.startsWith('#/')) throw invalidSpec(`Reference ${ref} is not local to the document (#/…)`);
    let node: unknown = this.spec;
    for (const raw of ref.slice(2).split('/')) {
      const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      node = isObject(node) && Object.hasOwn(node, key) ? node[key] : undefined;
      if (node === undefined) throw invalidSpec(`Reference ${ref} names nothing in the document`);
    }
    return node;
  }
}
