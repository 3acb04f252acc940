import { ApiClient, apiPath, type OperatorOptions } from '../api-client.ts';
import { duration, orDash, output, timestamp } from '../format.ts';

/** Svix's attempt fields; attemptNumber onwards are Courier extensions, absent elsewhere. */
interface AttemptOut {
  id: string;
  msgId: string;
  timestamp: string;
  responseStatusCode: number;
  responseDurationMs: number;
  statusText: string;
  attemptNumber?: number;
  failureKind?: string | null;
  decision?: string;
  nextDelayMs?: number | null;
}

export interface AttemptsOptions extends OperatorOptions {
  limit: number;
  msg?: string;
}

/** The HTTP status, or why no response came (timeout, connection_refused, …). */
function outcome(a: AttemptOut): string {
  if (a.responseStatusCode) return String(a.responseStatusCode);
  return a.failureKind ?? 'no response';
}

/** retry in 1m 2s, delivered, failed, expired. */
function decision(a: AttemptOut): string {
  if (!a.decision) return '-';
  return a.nextDelayMs != null ? `${a.decision} in ${duration(a.nextDelayMs)}` : a.decision;
}

/** `courier attempts`: the latest delivery attempts to one endpoint, newest first. */
export async function attempts(app: string, endpoint: string, options: AttemptsOptions) {
  const client = ApiClient.connect(options);
  const [path, query] = options.msg
    ? [apiPath('app', app, 'attempt', 'msg', options.msg), { endpoint_id: endpoint }]
    : [apiPath('app', app, 'attempt', 'endpoint', endpoint), {}];
  const list = await client.list<AttemptOut>(path, query, options.limit);
  output(
    options.json,
    list,
    [
      { header: 'TIME', value: (a: AttemptOut) => timestamp(a.timestamp) },
      { header: 'MESSAGE', value: (a) => a.msgId },
      { header: '#', value: (a) => orDash(a.attemptNumber), align: 'right' },
      { header: 'STATUS', value: outcome, align: 'right' },
      { header: 'RESULT', value: (a) => a.statusText },
      { header: 'DURATION', value: (a) => duration(a.responseDurationMs), align: 'right' },
      { header: 'DECISION', value: decision },
    ],
    list,
    'no attempts yet',
  );
}
