import { definePolicy, type PolicyOverrides } from '../policy/index.ts';
import type { RetryPolicy } from '../policy/types.ts';

/**
 * Layers retry-policy overrides: the installation's configuration, then the application's,
 * then the endpoint's. classifier, retryAfter and giveUp merge field by field; a layer that sets
 * backoff replaces the backoff wholesale (mixing an exponential base with a schedule means nothing).
 */
export function mergeOverrides(...layers: readonly (PolicyOverrides | null | undefined)[]): PolicyOverrides {
  const merged: {
    classifier?: PolicyOverrides['classifier'];
    backoff?: PolicyOverrides['backoff'];
    retryAfter?: PolicyOverrides['retryAfter'];
    giveUp?: PolicyOverrides['giveUp'];
  } = {};
  for (const layer of layers) {
    if (!layer) continue;
    if (layer.classifier) {
      merged.classifier = {
        ...merged.classifier,
        ...layer.classifier,
        overrides: { ...merged.classifier?.overrides, ...layer.classifier.overrides },
      };
    }
    if (layer.backoff) merged.backoff = layer.backoff;
    if (layer.retryAfter) merged.retryAfter = { ...merged.retryAfter, ...layer.retryAfter };
    if (layer.giveUp) merged.giveUp = { ...merged.giveUp, ...layer.giveUp };
  }
  return merged;
}

/** The policy the layers of overrides make over the defaults: the worker's, the API's check and answer. */
export const effectivePolicy = (...layers: readonly (PolicyOverrides | null | undefined)[]): RetryPolicy =>
  definePolicy(mergeOverrides(...layers));

/** Resolves and caches the effective policy per (application, endpoint) override pair. */
export class PolicyResolver {
  private readonly cache = new Map<string, RetryPolicy>();

  constructor(private readonly base: PolicyOverrides = {}) {}

  resolve(appPolicy: unknown, endpointPolicy: unknown): RetryPolicy {
    if (!appPolicy && !endpointPolicy) return this.defaultPolicy();
    const key = JSON.stringify([appPolicy, endpointPolicy]);
    let policy = this.cache.get(key);
    if (!policy) {
      policy = effectivePolicy(
        this.base,
        appPolicy as PolicyOverrides | null,
        endpointPolicy as PolicyOverrides | null,
      );
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(key, policy);
    }
    return policy;
  }

  private defaultPolicy(): RetryPolicy {
    let policy = this.cache.get('');
    if (!policy) {
      policy = effectivePolicy(this.base);
      this.cache.set('', policy);
    }
    return policy;
  }
}
