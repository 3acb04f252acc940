/**
 * `courier app-tokens`: tokens that open one application's part of the API (Svix's app portal
 * access), to hand to the application's owner.
 */
import { formatDuration } from '../../policy/duration.ts';
import { ApiClient, apiPath, type OperatorOptions } from '../api-client.ts';
import { usageError } from '../errors.ts';
import { printJson } from '../format.ts';

export interface CreateOptions extends OperatorOptions {
  capability?: string[];
  readOnly?: boolean;
  /** Seconds. */
  expiry?: number;
  session?: string;
  featureFlag?: string[];
}

export interface ExpireOptions extends OperatorOptions {
  session?: string[];
  /** Seconds. */
  in?: number;
}

/** Prints the token, shown this once (Courier keeps only its hash), and the link. */
export async function createAppToken(app: string, options: CreateOptions) {
  if (options.capability && !options.capability.includes('ViewBase')) {
    throw usageError('--capability must include ViewBase, which every token has');
  }
  const made = await ApiClient.connect(options).request<{ token: string; url: string }>(
    'POST',
    apiPath('auth', 'app-portal-access', app),
    {
      body: {
        capabilities: options.capability,
        readOnly: options.readOnly,
        expiry: options.expiry,
        sessionId: options.session,
        featureFlags: options.featureFlag,
      },
    },
  );
  if (options.json) printJson(made);
  else process.stdout.write(`token: ${made.token}\nurl:   ${made.url}\n`);
}

/** Svix answers expire-all with no content: what is printed is what was asked. */
export async function expireAppTokens(app: string, options: ExpireOptions) {
  const sessions = options.session ?? [];
  const inSeconds = options.in ?? 0;
  await ApiClient.connect(options).request('POST', apiPath('auth', 'app', app, 'expire-all'), {
    body: { expiry: inSeconds, sessionIds: sessions },
  });
  if (options.json) {
    printJson({ app, sessions, inSeconds });
    return;
  }
  const all = sessions.length === 0;
  const which = all
    ? `every token of ${app}`
    : `the tokens of ${app}'s session${sessions.length > 1 ? 's' : ''} ${sessions.join(', ')}`;
  const when = inSeconds > 0 ? `${all ? 'ends' : 'end'} within ${formatDuration(inSeconds * 1000)}` : 'ended';
  process.stdout.write(`${which} ${when}\n`);
}
