/** For the CLI's end-to-end tests: messages delivered at once, as a worker would. */
import { Webhook } from 'standardwebhooks';
import { OperatorRelay } from '../../src/dispatch/operator-webhook.ts';
import { silentLogger } from '../../src/logger.ts';
import type { Received } from '../delivery/receiver.ts';
import { publishMessage, type TestApi } from '../e2e/support.ts';
import { virtualWorker } from '../support/engine.ts';

/**
 * Runs a worker once on what is due, operational events included (its relay publishes them first).
 * Signed now: the standardwebhooks verifier refuses a signature more than 5 minutes off its own clock.
 */
export async function deliverDue(api: TestApi): Promise<void> {
  api.clock.set(Date.now() + 1000);
  const relay = new OperatorRelay(api.db, api.clock, silentLogger);
  const engine = virtualWorker(api.db, { clock: api.clock, operatorRelay: relay });
  try {
    await relay.run();
    await engine.worker.runOnce();
  } finally {
    await engine.sender.close();
  }
}

/** Publishes one message to the application and delivers it; its id. */
export async function publishAndDeliver(
  api: TestApi,
  app: string,
  body: Record<string, unknown>,
): Promise<string> {
  api.clock.set(Date.now());
  const messageId = await publishMessage(api, app, body);
  await deliverDue(api);
  return messageId;
}

/** Whether the standardwebhooks verifier takes the request as signed with the secret. */
export function signedBy(secret: string, request: Received): boolean {
  try {
    new Webhook(secret).verify(request.body.toString(), request.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}
