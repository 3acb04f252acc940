/** For the CLI's end-to-end tests: a message published and delivered at once, as a worker would. */
import { publishMessage, type TestApi } from '../e2e/support.ts';
import { virtualWorker } from '../support/engine.ts';

/**
 * Publishes one message to the application and runs a worker once; its id. Signed now: the
 * standardwebhooks verifier refuses a signature more than 5 minutes off its own clock.
 */
export async function publishAndDeliver(
  api: TestApi,
  app: string,
  body: Record<string, unknown>,
): Promise<string> {
  api.clock.set(Date.now());
  const messageId = await publishMessage(api, app, body);
  const engine = virtualWorker(api.db, { clock: api.clock });
  try {
    api.clock.advance(1000);
    await engine.worker.runOnce();
  } finally {
    await engine.sender.close();
  }
  return messageId;
}
