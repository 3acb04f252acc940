import { errors } from 'undici';
import { describe, expect, it } from 'vitest';
import {
  DeadlineError,
  errorMessage,
  isLocalFailure,
  isProgrammerError,
  networkFailureKind,
  outcomeForError,
} from '../../src/delivery/network-errors.ts';
import { SsrfRefusedError } from '../../src/delivery/ssrf-guard.ts';

function coded(code: string, message = `${code} happened`): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

describe('networkFailureKind', () => {
  it.each([
    // undici's own error classes, constructed for real so a renamed code would fail here
    [new errors.ConnectTimeoutError(), 'connect_timeout'],
    [new errors.SocketError('other side closed'), 'connection_reset'],
    [new errors.HeadersTimeoutError(), 'timeout'],
    [new errors.BodyTimeoutError(), 'timeout'],
    [new errors.RequestAbortedError(), 'timeout'],
    [new errors.ResponseContentLengthMismatchError(), 'connection_reset'],
    [new errors.HeadersOverflowError(), 'other'],
    [new errors.InformationalError('reset'), 'other'],
    [new DeadlineError(300), 'timeout'],
    [new DOMException('This operation was aborted', 'AbortError'), 'timeout'],
    [coded('ABORT_ERR'), 'timeout'],
    [coded('ECONNREFUSED'), 'connection_refused'],
    [coded('ECONNRESET'), 'connection_reset'],
    [coded('EPIPE'), 'connection_reset'],
    [coded('ERR_STREAM_PREMATURE_CLOSE'), 'connection_reset'],
    [coded('ETIMEDOUT'), 'connect_timeout'],
    [coded('ENOTFOUND'), 'dns'],
    [coded('EAI_AGAIN'), 'dns'],
    [coded('EAI_FAIL'), 'dns'],
    [coded('CERT_HAS_EXPIRED'), 'tls'],
    [coded('DEPTH_ZERO_SELF_SIGNED_CERT'), 'tls'],
    [coded('SELF_SIGNED_CERT_IN_CHAIN'), 'tls'],
    [coded('UNABLE_TO_VERIFY_LEAF_SIGNATURE'), 'tls'],
    [coded('UNABLE_TO_GET_ISSUER_CERT_LOCALLY'), 'tls'],
    [coded('ERR_TLS_CERT_ALTNAME_INVALID'), 'tls'],
    [coded('ERR_TLS_HANDSHAKE_TIMEOUT'), 'tls'],
    [coded('ERR_SSL_WRONG_VERSION_NUMBER'), 'tls'],
    [coded('EPROTO'), 'tls'],
    [coded('EHOSTUNREACH'), 'other'],
    [coded('HPE_INVALID_CONSTANT'), 'other'],
    [new Error('no code at all'), 'other'],
    ['a string', 'other'],
    [null, 'other'],
    [undefined, 'other'],
  ] as const)('%s → %s', (err, kind) => {
    expect(networkFailureKind(err)).toBe(kind);
  });

  it('reads the code of the first attempt inside an AggregateError (happy-eyeballs connect)', () => {
    const aggregate = new AggregateError(
      [coded('ECONNREFUSED'), coded('ECONNREFUSED')],
      'all attempts failed',
    );
    expect(networkFailureKind(aggregate)).toBe('connection_refused');
    expect(networkFailureKind(new AggregateError([], 'empty'))).toBe('other');
  });
});

describe('outcomeForError', () => {
  it('turns an SSRF refusal into a refused outcome carrying the reason verbatim', () => {
    const reason = 'refused: a.test resolves to an address which is in a private network range (RFC 1918)';
    expect(outcomeForError(new SsrfRefusedError(reason))).toEqual({ kind: 'refused', reason });
    // Matched by code, wherever it is carried.
    expect(outcomeForError(coded('ERR_SSRF_REFUSED', reason))).toEqual({ kind: 'refused', reason });
    expect(outcomeForError(new AggregateError([new SsrfRefusedError(reason)], 'x'))).toEqual({
      kind: 'refused',
      reason,
    });
  });

  it('keeps the code in the message for the attempt log', () => {
    expect(outcomeForError(coded('ECONNRESET', 'read ECONNRESET'))).toEqual({
      kind: 'network',
      failure: 'connection_reset',
      message: 'read ECONNRESET',
    });
    expect(errorMessage(new errors.SocketError('other side closed'))).toBe(
      'UND_ERR_SOCKET: other side closed',
    );
    expect(errorMessage('weird')).toBe('weird');
  });
});

describe('isLocalFailure', () => {
  it('is this machine out of a resource, not an address it cannot reach', () => {
    expect(['EMFILE', 'ENFILE', 'ENOBUFS', 'ENOMEM'].map((code) => isLocalFailure(coded(code)))).toEqual([
      true,
      true,
      true,
      true,
    ]);
    // Also what an IPv6 receiver gives on a host without IPv6: the receiver's URL, so it counts.
    expect(isLocalFailure(coded('EADDRNOTAVAIL'))).toBe(false);
    expect(isLocalFailure(coded('ECONNREFUSED'))).toBe(false);
  });
});

describe('isProgrammerError', () => {
  it('singles out misuse, which the Sender throws rather than reports', () => {
    expect(isProgrammerError(new errors.InvalidArgumentError('invalid header'))).toBe(true);
    expect(isProgrammerError(new errors.ClientClosedError())).toBe(true);
    expect(isProgrammerError(new errors.ClientDestroyedError())).toBe(true);
    expect(isProgrammerError(coded('ECONNRESET'))).toBe(false);
  });
});
