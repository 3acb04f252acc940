/**
 * `courier verify` and `courier sign`: a receiver's developer checks a webhook they got against the
 * endpoint's secret, or signs a body to test their receiver; offline, no API involved.
 */
import { systemClock } from '../../clock.ts';
import { newId } from '../../ids.ts';
import { formatDuration } from '../../policy/duration.ts';
import { type Examination, examine, webhookHeaders } from '../../signing/index.ts';
import { CliError } from '../errors.ts';
import { duration, fieldLines, printJson, printLines, timestamp } from '../format.ts';
import { secretsGiven } from '../webhook-input.ts';

export interface VerifyOptions {
  header?: Record<string, string>;
  secret?: string[];
  /** Seconds. */
  tolerance?: number;
  /** Milliseconds since the epoch: the time to check the timestamp against, instead of now. */
  at?: number;
  json?: boolean;
}

export function verifyWebhook(body: Buffer, options: VerifyOptions): void {
  const secrets = secretsGiven(options.secret);
  const headers = options.header ?? {};
  const now = options.at ?? systemClock.now();
  const found = examine(body, headers, secrets, { now: () => now, toleranceSec: options.tolerance });
  const hint = found.problem && !found.match ? bodyHint(body, headers, secrets, now, found) : undefined;
  if (options.json) {
    printJson({
      verified: !found.problem,
      problem: found.problem ?? null,
      msgId: found.msgId ?? null,
      timestamp: found.timestamp ?? null,
      ageSec: found.ageSec ?? null,
      toleranceSec: found.toleranceSec,
      v1Signatures: found.v1Signatures,
      otherSignatures: found.otherSignatures,
      secrets: secrets.length,
      // Numbered from 1, as the text says them.
      match: found.match ? { secret: found.match.secret + 1, signature: found.match.signature + 1 } : null,
      hint: hint ?? null,
    });
  } else {
    printLines(...fieldLines(reportFields(found, secrets.length)));
  }
  if (!found.problem) {
    if (!options.json)
      printLines(`verified: ${verdictOfMatch(found, secrets.length)}, ${age(found.ageSec!)}`);
    return;
  }
  // Exit 1: the report is on stdout, the verdict on stderr.
  throw new CliError(
    `not verified: ${failure(found, Object.keys(headers), options.at !== undefined)}${hint ? `; ${hint}` : ''}`,
    1,
  );
}

function reportFields(found: Examination, secrets: number): [string, string][] {
  const { msgId, timestamp: sent, ageSec } = found;
  const other = found.otherSignatures ? `, ${found.otherSignatures} of another version (not checked)` : '';
  return [
    ['webhook-id', msgId ?? 'missing'],
    [
      'webhook-timestamp',
      sent === undefined
        ? 'missing'
        : ageSec === undefined
          ? `${JSON.stringify(sent)}, not a Unix time in seconds`
          : `${sent} (${timestamp(new Date(Number(sent) * 1000).toISOString())}, ${age(ageSec)})`,
    ],
    ['webhook-signature', `${found.v1Signatures} v1 signature${found.v1Signatures === 1 ? '' : 's'}${other}`],
    ['secrets given', String(secrets)],
    ['match', found.match ? verdictOfMatch(found, secrets) : 'none'],
  ];
}

const verdictOfMatch = (found: Examination, secrets: number): string =>
  `signature ${found.match!.signature + 1} of ${found.v1Signatures} matches secret ${found.match!.secret + 1} of ${secrets}`;

function age(ageSec: number): string {
  if (ageSec === 0) return 'sent this second';
  const span = duration(Math.abs(ageSec) * 1000);
  return ageSec > 0 ? `sent ${span} ago` : `dated ${span} ahead of this clock`;
}

/** Why it fails, in the order verify() checks, with what to do about it. */
function failure(found: Examination, given: string[], atGiven: boolean): string {
  const tolerance = formatDuration(found.toleranceSec * 1000);
  switch (found.problem!.code) {
    case 'MISSING_HEADERS': {
      const missing = [
        !found.msgId && 'webhook-id',
        !found.timestamp && 'webhook-timestamp',
        found.v1Signatures + found.otherSignatures === 0 && 'webhook-signature',
      ].filter(Boolean);
      const had = given.length ? `the headers given: ${given.join(', ')}` : 'no --header given';
      return `missing ${missing.join(', ')} (${had})`;
    }
    case 'INVALID_TIMESTAMP':
      return 'webhook-timestamp is not a Unix time in seconds';
    case 'TIMESTAMP_TOO_OLD':
    case 'TIMESTAMP_TOO_NEW': {
      const when = found.ageSec! > 0 ? 'is older than' : 'is further in the future than';
      const signature = found.match
        ? 'the signature matches, but the timestamp'
        : 'no signature matches, and the timestamp';
      const advice = atGiven
        ? '--tolerance widens it'
        : found.ageSec! > 0
          ? 'to check a captured webhook, give --at its time'
          : 'are the clocks apart?';
      return `${signature} ${when} the tolerance of ${tolerance}: a receiver refuses it as a possible replay (${advice})`;
    }
    case 'NO_MATCHING_SIGNATURE':
      return found.v1Signatures === 0
        ? 'the signature header has no v1 signature (Courier signs with v1)'
        : 'no signature matches: the secret, the body bytes, webhook-id or webhook-timestamp differ from what was signed';
  }
}

/** A body that would match with the bytes an editor or a copy commonly adds or drops. */
function bodyHint(
  body: Buffer,
  headers: Record<string, string>,
  secrets: Buffer[],
  now: number,
  found: Examination,
): string | undefined {
  const text = body.toString('latin1');
  const variants: [string, Buffer][] = [
    [
      'without the final newline, which was added after signing',
      Buffer.from(text.replace(/\r?\n$/, ''), 'latin1'),
    ],
    [
      'without the leading byte order mark, which was added after signing',
      Buffer.from(text.replace(/^\xef\xbb\xbf/, ''), 'latin1'),
    ],
    ['with CRLF line ends made LF again', Buffer.from(text.replace(/\r\n/g, '\n'), 'latin1')],
  ];
  for (const [how, bytes] of variants) {
    if (bytes.equals(body)) continue;
    const again = examine(bytes, headers, secrets, { now: () => now, toleranceSec: found.toleranceSec });
    if (again.match) return `the body matches ${how}`;
  }
  return undefined;
}

export interface SignOptions {
  secret?: string[];
  id?: string;
  /** Unix seconds. */
  timestamp?: number;
  json?: boolean;
}

/** Prints the three headers (`Name: value` lines, ready for `curl -H @-`), a signature per secret. */
export function signWebhook(body: Buffer, options: SignOptions): void {
  const secrets = secretsGiven(options.secret);
  const now = systemClock.now();
  const headers = webhookHeaders({
    msgId: options.id ?? newId('msg', now),
    timestampSec: options.timestamp ?? Math.floor(now / 1000),
    body,
    secrets,
  });
  if (options.json) printJson(headers);
  else printLines(...Object.entries(headers).map(([name, value]) => `${name}: ${value}`));
}
