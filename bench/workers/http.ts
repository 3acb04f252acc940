/** The same POST every peer's job makes: 1 KiB JSON to the receiver over a keep-alive pool. */
import { Agent } from 'undici';

const agent = new Agent({ connections: 256, keepAliveTimeout: 60_000 });

export async function post(url: string, body: string): Promise<void> {
  const res = await agent.request({
    origin: url,
    path: '/hook',
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  await res.body.dump();
  if (res.statusCode >= 300) throw new Error(`receiver answered ${res.statusCode}`);
}
