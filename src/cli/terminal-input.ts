/**
 * What the operator types at a terminal: a secret given as `--secret -`, unseen (as `read -s`
 * reads it; from a pipe or a file, read to its end), and a yes or no before a deletion.
 */
import { createInterface, type Interface } from 'node:readline';
import { Writable } from 'node:stream';
import type { ReadStream } from 'node:tty';
import { CliError } from './errors.ts';
import { readAll } from './input.ts';

export const isTerminal = (stream: NodeJS.ReadableStream | NodeJS.WritableStream): boolean =>
  Boolean((stream as ReadStream).isTTY);

/** `what` names the input in the prompt: "the secret", "the secret, or two separated by a space". */
export async function readSecretInput(
  what: string,
  stdin: NodeJS.ReadableStream = process.stdin,
  prompt: NodeJS.WritableStream = process.stderr,
): Promise<string> {
  if (!isTerminal(stdin)) return readAll(stdin);
  // readline's line editing (backspace, Ctrl-U) without its echo: it writes to nowhere. The terminal
  // stops echoing as the interface starts, before the prompt invites typing.
  const nowhere = new Writable({ write: (_chunk, _encoding, done) => done() });
  const line = createInterface({ input: stdin, output: nowhere, terminal: true });
  prompt.write(`courier: type ${what} (not shown), then Enter: `);
  try {
    return (await typedLines(line)) ?? '';
  } finally {
    // Nothing typed was echoed, the Enter neither.
    prompt.write('\n');
  }
}

/** A question answered at a terminal: true for y or yes; anything else, Ctrl-D too, is no. */
export async function confirmed(
  question: string,
  stdin: NodeJS.ReadableStream = process.stdin,
  prompt: NodeJS.WritableStream = process.stderr,
): Promise<boolean> {
  const line = createInterface({ input: stdin, output: prompt, terminal: true });
  // readline's prompt, so that its redraws (an edit, a question wider than the terminal) know it.
  line.setPrompt(`courier: ${question} [y/N] `);
  line.prompt();
  // readline ends an answered line with its own line break.
  const answer = await typedLines(line).catch((error: unknown) => {
    prompt.write('\n');
    throw error;
  });
  if (answer === undefined) prompt.write('\n');
  return /^y(es)?$/i.test(answer?.trim() ?? '');
}

/**
 * What was typed, up to Enter, with the rest of a paste that held line breaks (lines that came
 * together: left unread, they would reach the shell after the command, as commands); undefined for
 * Ctrl-D on an empty line. The interface is closed after, the terminal back as it was. In raw mode
 * Ctrl-C sends no signal: readline reports it, and the command ends as if signalled (130). Ctrl-Z
 * is ignored: suspended, readline would leave the terminal echoing, or the command paused for good.
 */
async function typedLines(line: Interface): Promise<string | undefined> {
  try {
    return await new Promise<string | undefined>((resolve, reject) => {
      const lines: string[] = [];
      line.on('line', (typed) => {
        // readline emits every line of what came in one read before this runs.
        if (lines.push(typed) === 1) setImmediate(() => resolve(lines.join('\n')));
      });
      line.once('close', () => resolve(lines.length ? lines.join('\n') : undefined));
      line.once('SIGINT', () => reject(new CliError('interrupted', 130)));
      line.on('SIGTSTP', () => {});
      line.once('error', reject);
    });
  } finally {
    line.close();
  }
}
