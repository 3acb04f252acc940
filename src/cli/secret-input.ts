/**
 * A secret given as `--secret -`: typed at a terminal without being shown (as `read -s` does),
 * else read from the pipe or file to its end.
 */
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import type { ReadStream } from 'node:tty';
import { CliError } from './errors.ts';
import { readAll } from './input.ts';

/** `what` names the input in the prompt: "the secret", "the secrets, separated by spaces". */
export async function readSecretInput(
  what: string,
  stdin: NodeJS.ReadableStream = process.stdin,
  prompt: NodeJS.WritableStream = process.stderr,
): Promise<string> {
  if (!(stdin as ReadStream).isTTY) return readAll(stdin);
  // readline's line editing (backspace, Ctrl-U) without its echo: it writes to nowhere. The terminal
  // stops echoing as the interface starts, before the prompt invites typing.
  const nowhere = new Writable({ write: (_chunk, _encoding, done) => done() });
  const line = createInterface({ input: stdin, output: nowhere, terminal: true });
  prompt.write(`courier: type ${what} (not shown), then Enter: `);
  try {
    return await new Promise<string>((resolve, reject) => {
      line.once('line', resolve);
      // Ctrl-D on an empty line; after a 'line', a no-op.
      line.once('close', () => resolve(''));
      // In raw mode Ctrl-C sends no signal: readline reports it, and the command ends as if signalled.
      line.once('SIGINT', () => reject(new CliError('interrupted', 130)));
    });
  } finally {
    line.close();
    prompt.write('\n');
  }
}
