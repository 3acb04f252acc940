/**
 * `courier app-tokens`: tokens that open one application's part of the API (Svix's app portal
 * access), to hand to the application's owner.
 */
import { ApiClient, apiPath, type OperatorOptions } from '../api-client.ts';
import { printJson } from '../format.ts';

export interface CreateOptions extends OperatorOptions {
  capability?: string[];
  readOnly?: boolean;
  /** Seconds. */
  expiry?: number;
  session?: string;
}

export interface ExpireOptions extends OperatorOptions {
  session?: string[];
  /** Seconds. */
  in?: number;
}

/** Prints the token, shown this once (Courier keeps only its hash), and the link. */
export async function createAppToken(app: string, options: CreateOptions) {
  const made = await ApiClient.connect(options).request<{ token: string; url: string }>(
    'POST',
    apiPath('auth', 'app-portal-access', app),
    {
      body: {
        capabilities: options.capability,
        readOnly: options.readOnly,
        expiry: options.expiry,
        sessionId: options.session,
      },
    },
  );
  if (options.json) printJson(made);
  else process.stdout.write(`token: ${made.token}\nurl:   ${made.url}\n`);
}

export async function expireAppTokens(app: string, options: ExpireOptions) {
  const sessions = options.session ?? [];
  await ApiClient.connect(options).request('POST', apiPath('auth', 'app', app, 'expire-all'), {
    body: { expiry: options.in ?? 0, sessionIds: sessions },
  });
  if (options.json) {
    printJson({ app, sessions, inSeconds: options.in ?? 0 });
    return;
  }
  const which = sessions.length > 0 ? `the tokens of session ${sessions.join(', ')}` : 'every token';
  process.stdout.write(`${which} of ${app} ${options.in ? `expire in ${options.in} s` : 'expired'}\n`);
}
