/**
 * `courier endpoints rotate-secret` and `courier operational-endpoints rotate-secret`: an
 * endpoint's signing secret replaced, the previous one signing beside it for a grace period.
 */
import { formatDuration } from '../policy/duration.ts';
import { SECRET_GRACE_DEFAULT_S } from '../setting-limits.ts';
import { generateSecret } from '../signing/secrets.ts';
import { ApiClient, type OperatorOptions } from './api-client.ts';
import { apiError, CliError } from './errors.ts';
import { printJson, printLines } from './format.ts';
import { type PathOf, shownSecret } from './resource-calls.ts';
import { secretGiven } from './resource-input.ts';

export interface RotateOptions extends OperatorOptions {
  secret?: string;
  gracePeriod?: number;
}

/**
 * A new signing secret: the one given, or one made here and printed. For the grace period each
 * delivery carries a signature by the previous secret too, so the receiver can switch at leisure.
 * The secret is made here rather than read back after: a read could meet another rotation's, and
 * an unanswered rotation can be repeated with it.
 */
export async function rotateSecret(
  at: PathOf,
  endpoint: string,
  rotateCommand: string,
  options: RotateOptions,
): Promise<void> {
  const client = ApiClient.connect(options);
  const given = await secretGiven(options.secret);
  const key = given ?? generateSecret();
  const grace = options.gracePeriod ?? SECRET_GRACE_DEFAULT_S;
  if (given !== undefined) {
    // The API keeps a secret rotated to itself as it is: no grace period starts, nothing to say but that.
    const current = await client.request<{ key: string }>('GET', at(endpoint, 'secret'));
    if (current.key === key) {
      if (options.json) printJson({ rotated: false, key });
      else printLines(`${endpoint} already signs with this secret: nothing changed`);
      return;
    }
  }
  // A blind repeat would install another secret nobody saw, signing through the grace period and
  // taking one of the earlier secrets' places; a repeat with this key changes nothing if it went.
  const again = `${rotateCommand} --secret ${given === undefined ? key : '<the one given>'} --grace-period ${formatDuration(grace * 1000)}`;
  const hint = `it may have been rotated: \`${again}\` rotates it if not, and changes nothing if so`;
  try {
    await client.request('POST', at(endpoint, 'secret', 'rotate'), {
      body: { key, gracePeriodSeconds: grace },
      timeoutHint: hint,
      droppedHint: hint,
    });
  } catch (error) {
    if (error instanceof CliError && error.apiCode === 'limit_reached') {
      throw apiError(
        `${endpoint} has as many earlier secrets still signing as it may (their grace periods are not over): ` +
          'rotate again when one ends, or with --grace-period 0, which stops its current secret at once',
        error.apiCode,
      );
    }
    throw error;
  }
  if (options.json) printJson({ rotated: true, key, gracePeriodSeconds: grace });
  else
    printLines(
      `rotated ${endpoint}`,
      `signing secret: ${shownSecret(key, given)}`,
      grace === 0
        ? 'the previous secret signs nothing more'
        : `the previous secret signs beside it for ${formatDuration(grace * 1000)}`,
    );
}
