/**
 * Where each message stands, for pages of the application's messages (`GET …/msg?with_status=true`,
 * the app portal's log): messages each sent to every endpoint, most delivered (their rows gone, their
 * attempts kept), a tenth waiting for a retry and a tenth dead, three attempts each. Times every page of 50
 * (the portal's) and of 250 (the API's largest), the list alone and with its counts; and pages of 50
 * with their counts of the messages failed at one endpoint at least (`status=2`), and the walk of a
 * standing none has (`status=3`, sending: every message read for one empty page). The rows are
 * written by SQL, not published: the bench is about reading them.
 * Usage: tsx bench/message-status.ts [messages] [endpoints] [--pglite]   (default 20000 and 20)
 */

import { messageStatusCounts } from '../src/store/repos/message-status-counts.ts';
import { listMessages } from '../src/store/repos/messages.ts';
import { makeApp, makeEndpoint } from '../test/support/fixtures.ts';
import { openStore } from './lib.ts';

export interface MessageStatusFigures {
  messages: number;
  endpoints: number;
  /** Milliseconds per page (median), the list alone and with its counts, for pages of 50 and 250. */
  page50Ms: number;
  page50WithStatusMs: number;
  page250Ms: number;
  page250WithStatusMs: number;
  /** The same per page of 50 with counts, of the messages failed at one endpoint at least. */
  page50FailedMs: number;
  /** Milliseconds to find that no message is being sent: one page's walk over all of them. */
  noneSendingMs: number;
}

/** Message i's delivery to endpoint j: dead when (i + j) % 10 is 0, waiting when 1, else delivered. */
async function makeMessages(
  db: Parameters<typeof makeApp>[0],
  appId: string,
  endpoints: string[],
  n: number,
) {
  const now = new Date();
  await db.query(
    `insert into courier_messages (id, app_id, event_type, payload, created_at)
     select 'msg_' || lpad(i::text, 10, '0'), $1, 'invoice.paid', convert_to('{"i":' || i || '}', 'UTF8'), $3
       from generate_series(1, $2) i`,
    [appId, n, now],
  );
  const each = `from generate_series(1, $1) i cross join unnest($2::text[]) with ordinality e(id, j)`;
  await db.query(
    `insert into courier_deliveries (message_id, endpoint_id, state, next_attempt_at, attempts, created_at, updated_at)
     select 'msg_' || lpad(i::text, 10, '0'), e.id, case when (i + j) % 10 = 0 then 'failed' else 'pending' end,
            $3::timestamptz + interval '1 hour', 3, $3, $3
       ${each} where (i + j) % 10 < 2`,
    [n, endpoints, now],
  );
  // Three attempts each: the delivered ones after two retries, the others retried or failed.
  await db.query(
    `insert into courier_attempts (id, delivery_id, message_id, endpoint_id, number, url, started_at, duration_ms,
                                   status_code, decision, detail)
     select 'atmpt_' || lpad(i::text, 10, '0') || '_' || lpad(j::text, 4, '0') || '_' || k, i * 10000 + j,
            'msg_' || lpad(i::text, 10, '0'), e.id, k, 'http://127.0.0.1:1/', $3, 5,
            case when k = 3 and (i + j) % 10 >= 2 then 200 else 503 end,
            case when k < 3 or (i + j) % 10 = 1 then 'retry' when (i + j) % 10 = 0 then 'failed' else 'delivered' end, ''
       ${each} cross join generate_series(1, 3) k`,
    [n, endpoints, now],
  );
}

export async function measureMessageStatus(
  messages: number,
  endpointCount: number,
  embedded = false,
): Promise<MessageStatusFigures> {
  const store = await openStore('bench_message_status', embedded);
  const { db } = store;
  try {
    const app = await makeApp(db, Date.now());
    const endpoints: string[] = [];
    for (let j = 0; j < endpointCount; j++)
      endpoints.push((await makeEndpoint(db, app.id, Date.now(), { url: `http://127.0.0.1:1/${j}` })).id);
    await makeMessages(db, app.id, endpoints, messages);
    await store.analyze();

    /** How many endpoints message i stands at in each standing, by the rule above. */
    const expectedCounts = (i: number) => {
      const fail = endpoints.filter((_, j) => (i + j + 1) % 10 === 0).length;
      const pending = endpoints.filter((_, j) => (i + j + 1) % 10 === 1).length;
      return { success: endpointCount - fail - pending, pending, sending: 0, fail };
    };
    /**
     * Median milliseconds per page over every page, newest first; with counts, checked against the
     * rule above; with `standing`, the messages standing so at one endpoint at least.
     */
    const walk = async (limit: number, withStatus: boolean, standing?: 'fail' | 'sending') => {
      const times: number[] = [];
      let before: string | undefined;
      let seen = 0;
      for (;;) {
        const started = performance.now();
        const page = await listMessages(
          db,
          app.id,
          { standing },
          { limit, before, descending: true, withPayload: false },
        );
        const ids = page.data.map((m) => m.id);
        const counts = withStatus ? await messageStatusCounts(db, app.id, ids) : null;
        times.push(performance.now() - started);
        for (const id of standing ? ids : []) {
          if (expectedCounts(Number(id.slice(4)))[standing!] === 0)
            throw new Error(`${id} is not ${standing}`);
        }
        for (const id of counts ? ids : []) {
          const expected = expectedCounts(Number(id.slice(4)));
          if (JSON.stringify(counts!.get(id)) !== JSON.stringify(expected)) {
            throw new Error(
              `${id}: counted ${JSON.stringify(counts!.get(id))}, expected ${JSON.stringify(expected)}`,
            );
          }
        }
        seen += ids.length;
        if (page.done) break;
        before = ids.at(-1);
      }
      let standingSo = messages;
      if (standing) {
        standingSo = 0;
        for (let i = 1; i <= messages; i++) if (expectedCounts(i)[standing] > 0) standingSo++;
      }
      if (seen !== standingSo) throw new Error(`listed ${seen} messages of ${standingSo}`);
      times.sort((a, b) => a - b);
      return Math.round(times[Math.floor(times.length / 2)]! * 100) / 100;
    };
    return {
      messages,
      endpoints: endpointCount,
      page50Ms: await walk(50, false),
      page50WithStatusMs: await walk(50, true),
      page250Ms: await walk(250, false),
      page250WithStatusMs: await walk(250, true),
      page50FailedMs: await walk(50, true, 'fail'),
      noneSendingMs: await walk(50, false, 'sending'),
    };
  } finally {
    await store.drop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const [messages = 20_000, endpoints = 20] = args.filter((a) => !a.startsWith('--')).map(Number);
  if (!Number.isInteger(messages) || messages < 1 || !Number.isInteger(endpoints) || endpoints < 1) {
    console.error(
      `usage: tsx bench/message-status.ts [messages] [endpoints] [--pglite]  (whole numbers above 0; not ${args.join(' ')})`,
    );
    process.exit(2);
  }
  const embedded = args.includes('--pglite');
  console.log(
    JSON.stringify({
      store: embedded ? 'pglite' : 'postgresql',
      ...(await measureMessageStatus(messages, endpoints, embedded)),
    }),
  );
}
