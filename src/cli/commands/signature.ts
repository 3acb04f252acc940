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
import { MILLISECONDS_DIGITS, secretsGiven } from '../webhook-input.ts';

export interface VerifyOptions {
  header: Record<string, string>;
  secret?: string[];
  /** Seconds. */
  tolerance?: number;
  /** Milliseconds since the epoch: the time to check the timestamp against, instead of now. */
  at?: number;
  json?: boolean;
}

export async function verifyWebhook(body: Buffer, options: VerifyOptions): Promise<void> {
  const secrets = await secretsGiven(options.secret);
  const headers = options.header;
  const now = options.at ?? systemClock.now();
  const found = examine(body, headers, secrets, { now: () => now, toleranceSec: options.tolerance });
  const names = headerNames(headers);
  const hint =
    found.problem && !found.match && checked(found)
      ? bodyHint(body, headers, secrets, now, found)
      : undefined;
  const reason = found.problem
    ? `${failure(found, names, Object.keys(headers), options.at !== undefined)}${hint ? `; ${hint}` : ''}`
    : undefined;
  if (options.json) {
    printJson({
      verified: !found.problem,
      problem: found.problem ?? null,
      reason: reason ?? null,
      msgId: found.msgId ?? null,
      timestamp: found.timestamp ?? null,
      ageSec: found.ageSec ?? null,
      toleranceSec: found.toleranceSec,
      v1Signatures: found.v1Signatures,
      otherSignatures: found.otherSignatures,
      secrets: secrets.length,
      // Numbered from 1, as the text says them.
      match: found.match ? { secret: found.match.secret + 1, signature: found.match.signature + 1 } : null,
    });
  } else {
    const clock = options.at === undefined ? 'this clock' : '--at';
    printLines(...fieldLines(reportFields(found, names, secrets.length, clock)));
    if (!reason)
      printLines(`verified: ${age(found.ageSec!, clock)}, within the tolerance of ${tolerance(found)}`);
  }
  // Exit 1: the report is on stdout, the reason on stderr.
  if (reason) throw new CliError(`not verified: ${reason}`, 1);
}

const PARTS = ['id', 'timestamp', 'signature'] as const;
type Part = (typeof PARTS)[number];
type Names = Record<Part, string>;

/** The names the verifier read each part under: webhook-*, else svix-*; a missing one in the family the others came in. */
function headerNames(headers: Record<string, string>): Names {
  // As the verifier reads them: an empty value is as good as none.
  const given = new Set(
    Object.entries(headers)
      .filter(([, value]) => value !== '')
      .map(([name]) => name.toLowerCase()),
  );
  const has = (family: string) => PARTS.some((part) => given.has(`${family}-${part}`));
  const family = !has('webhook') && has('svix') ? 'svix' : 'webhook';
  const name = (part: Part) =>
    given.has(`webhook-${part}`) ? 'webhook' : given.has(`svix-${part}`) ? 'svix' : family;
  return Object.fromEntries(PARTS.map((part) => [part, `${name(part)}-${part}`])) as Names;
}

/** Whether the signatures could be compared: an id, a timestamp in seconds and a v1 signature came. */
const checked = (found: Examination): boolean =>
  Boolean(found.msgId) && found.ageSec !== undefined && found.v1Signatures > 0;

function reportFields(found: Examination, names: Names, secrets: number, clock: string): [string, string][] {
  const { msgId, timestamp: sent, ageSec } = found;
  const other = found.otherSignatures ? `, ${found.otherSignatures} of another version (not checked)` : '';
  const match = found.match
    ? `signature ${found.match.signature + 1} of ${found.v1Signatures} with secret ${found.match.secret + 1} of ${secrets}`
    : checked(found)
      ? 'none'
      : 'not checked';
  const signatures = found.v1Signatures + found.otherSignatures;
  return [
    [names.id, msgId ?? 'missing'],
    [
      names.timestamp,
      sent === undefined
        ? 'missing'
        : ageSec === undefined
          ? `${JSON.stringify(sent)}, not a Unix time in seconds`
          : `${sent} (${dateOf(Number(sent))}${age(ageSec, clock)})`,
    ],
    [
      names.signature,
      signatures === 0
        ? 'none'
        : `${found.v1Signatures} v1 signature${found.v1Signatures === 1 ? '' : 's'}${other}`,
    ],
    ['secrets given', String(secrets)],
    ['match', match],
  ];
}

// Beyond what a Date holds, the time goes without its date.
const dateOf = (seconds: number): string =>
  seconds <= 8_640_000_000_000 ? `${timestamp(new Date(seconds * 1000).toISOString())}, ` : '';

const tolerance = (found: Examination): string => formatDuration(found.toleranceSec * 1000);

function age(ageSec: number, clock: string): string {
  if (ageSec === 0) return 'sent this second';
  const span = duration(Math.abs(ageSec) * 1000);
  return ageSec > 0 ? `sent ${span} ago` : `dated ${span} ahead of ${clock}`;
}

/** Why it fails, in the order verify() checks, with what to do about it. */
function failure(found: Examination, names: Names, given: string[], atGiven: boolean): string {
  switch (found.problem!.code) {
    case 'MISSING_HEADERS': {
      const missing = [
        !found.msgId && names.id,
        !found.timestamp && names.timestamp,
        found.v1Signatures + found.otherSignatures === 0 && names.signature,
      ].filter(Boolean);
      return `missing ${missing.join(', ')} (the headers given: ${given.join(', ')})`;
    }
    case 'INVALID_TIMESTAMP':
      return `${names.timestamp} is not a Unix time in seconds`;
    case 'TIMESTAMP_TOO_OLD':
    case 'TIMESTAMP_TOO_NEW': {
      const old = found.ageSec! > 0;
      const signature = found.match
        ? 'the signature matches, but the timestamp'
        : 'no signature matches, and the timestamp';
      const beyond = `${old ? 'is older than' : 'is further in the future than'} the tolerance of ${tolerance(found)}`;
      const refusal = old ? 'a receiver refuses it as a possible replay' : 'a receiver refuses it';
      const advice =
        found.timestamp!.length >= MILLISECONDS_DIGITS
          ? `${names.timestamp} looks like milliseconds: it must be seconds`
          : atGiven
            ? '--tolerance widens it'
            : old
              ? 'to check a captured webhook, give --at the time it was received'
              : 'are the clocks apart?';
      return `${signature} ${beyond}: ${refusal} (${advice})`;
    }
    case 'NO_MATCHING_SIGNATURE':
      return found.v1Signatures === 0
        ? `${names.signature} has no v1 signature (Courier signs with v1)`
        : `no signature matches: the secret, the body bytes, ${names.id} or ${names.timestamp} differ from what was signed`;
  }
}

// What editors, shells and copies commonly do to a body's bytes, each undone on its own and together.
const CHANGES: readonly [string, (text: string) => string][] = [
  ['its final newline removed', (text) => text.replace(/\r?\n$/, '')],
  ['its byte order mark removed', (text) => text.replace(/^\xef\xbb\xbf/, '')],
  ['CRLF line ends made LF', (text) => text.replace(/\r\n/g, '\n')],
];

/** How the body would match, when undoing such changes (or adding a final newline) makes it. */
function bodyHint(
  body: Buffer,
  headers: Record<string, string>,
  secrets: Buffer[],
  now: number,
  found: Examination,
): string | undefined {
  const text = body.toString('latin1');
  const tries: [string, string][] = [['a final newline added', `${text}\n`]];
  for (let set = 1; set < 1 << CHANGES.length; set++) {
    const chosen = CHANGES.filter((_, i) => set & (1 << i));
    const changed = chosen.reduce((bytes, [, undo]) => undo(bytes), text);
    if (changed !== text) tries.push([chosen.map(([how]) => how).join(' and '), changed]);
  }
  for (const [how, changed] of tries) {
    const bytes = Buffer.from(changed, 'latin1');
    if (examine(bytes, headers, secrets, { now: () => now, toleranceSec: found.toleranceSec }).match) {
      return `the body matches with ${how}: its bytes changed after it was signed`;
    }
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
export async function signWebhook(body: Buffer, options: SignOptions): Promise<void> {
  const secrets = await secretsGiven(options.secret);
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
