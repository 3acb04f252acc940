/**
 * Response serializers (fast-json-stringify, Fastify's default) compiled on a route's first answer
 * with a given status, not when the server starts, as the request validators are (validation.ts):
 * compiling them all at once allocates megabytes that V8 keeps as heap afterwards. The OpenAPI test
 * compiles them all with `eagerSerializers`.
 */
import { type SerializerFactory, SerializerSelector } from '@fastify/fast-json-stringify-compiler';

export const eagerSerializers: SerializerFactory = SerializerSelector();

export const lazySerializers: SerializerFactory = (externalSchemas, options) => {
  const compile = eagerSerializers(externalSchemas, options);
  return (route) => {
    let serialize: ((doc: unknown) => string) | undefined;
    return (doc) => {
      serialize ??= compile(route);
      return serialize(doc);
    };
  };
};
