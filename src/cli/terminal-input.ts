/**
 * What the operator types at a terminal: a secret given as `--secret -`, unseen (as `read -s`
 * reads it; from a pipe or a file, read to its end), and a yes or no before a deletion.
 */
import { closeSync, constants, openSync, writeSync } from 'node:fs';
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
): Promise<string> {
  if (!isTerminal(stdin)) return readAll(stdin);
  // readline's line editing (backspace, Ctrl-U) without its echo: it writes to nowhere. The terminal
  // stops echoing as the interface starts, before the prompt invites typing.
  const nowhere = new Writable({ write: (_chunk, _encoding, done) => done() });
  const shown = promptOnTerminal();
  try {
    const typed = await typedAt(stdin, () => {
      const line = createInterface({ input: stdin, output: nowhere, terminal: true });
      shown.write(`courier: type ${what} (not shown), then Enter: `);
      return line;
    });
    return typed ?? '';
  } finally {
    // Nothing typed was echoed, the Enter neither.
    shown.write('\n');
    shown.close();
  }
}

/**
 * Where a secret's prompt is seen: stderr at a terminal; with stderr sent to a file or a pipe, the
 * terminal itself (/dev/tty, as ssh and sudo prompt), or stderr anyway when there is none. A
 * prompt that cannot be written (the terminal hung up) is no reason to lose what is typed.
 */
function promptOnTerminal(): { write: (text: string) => void; close: () => void } {
  const onStderr = { write: (text: string) => void process.stderr.write(text), close: () => {} };
  if (isTerminal(process.stderr)) return onStderr;
  let fd: number;
  try {
    // Not 'w': where there is no /dev/tty, that would make a file of that name.
    fd = openSync('/dev/tty', constants.O_WRONLY | constants.O_NOCTTY);
  } catch {
    return onStderr;
  }
  const quietly = (act: () => void) => {
    try {
      act();
    } catch {}
  };
  return { write: (text) => quietly(() => writeSync(fd, text)), close: () => quietly(() => closeSync(fd)) };
}

/** A question answered at a terminal: true for y or yes; anything else, Ctrl-D too, is no. */
export async function confirmed(
  question: string,
  stdin: NodeJS.ReadableStream = process.stdin,
  prompt: NodeJS.WritableStream = process.stderr,
): Promise<boolean> {
  // readline ends an answered line with its own line break.
  const answer = await typedAt(stdin, () => {
    const line = createInterface({ input: stdin, output: prompt, terminal: true });
    // readline's prompt, so that its redraws (an edit, a question wider than the terminal) know it.
    line.setPrompt(`courier: ${question} [y/N] `);
    line.prompt();
    return line;
  }).catch((error: unknown) => {
    prompt.write('\n');
    throw error;
  });
  if (answer === undefined) prompt.write('\n');
  return /^y(es)?$/i.test(answer?.trim() ?? '');
}

/** What typedLines answers once the command, stopped at its prompt, runs again. */
const RESUMED = Symbol('resumed');

/**
 * What is typed at the prompt `ask` makes (an interface, its prompt shown). Ctrl-Z suspends the
 * command; once it runs again its prompt is lost among the shell's lines, and what was typed before
 * unseen, so it asks again with a new interface, from the start, as sudo does (readline's own redraw
 * would climb into the shell's lines above a wrapped prompt, and its kill ring keep the old text).
 */
async function typedAt(terminal: NodeJS.ReadableStream, ask: () => Interface): Promise<string | undefined> {
  for (;;) {
    const typed = await typedLines(ask(), terminal as ReadStream);
    if (typed !== RESUMED) return typed;
  }
}

/**
 * What was typed, up to Enter, with the rest of a paste that held line breaks (lines that came
 * together: left unread, they would reach the shell after the command, as commands); undefined for
 * Ctrl-D on an empty line. The interface is closed after, the terminal back as it was. In raw mode
 * Ctrl-C and Ctrl-Z send no signal: readline reports them. Ctrl-C ends the command as if
 * signalled (130); Ctrl-Z suspends it, and the SIGCONT that resumes it answers RESUMED.
 */
async function typedLines(
  line: Interface,
  terminal: ReadStream,
): Promise<string | undefined | typeof RESUMED> {
  // A SIGCONT before a stop is someone else's (`kill -CONT`); after it, a `fg` (or a `bg`, then a
  // `fg`: the second reaches no listener of this call, or the next one's, not stopped, which
  // ignores it).
  let continued = () => {};
  const onContinue = () => continued();
  process.on('SIGCONT', onContinue);
  try {
    return await new Promise((resolve, reject) => {
      const lines: string[] = [];
      line.on('line', (typed) => {
        // readline emits every line of what came in one read before this runs.
        if (lines.push(typed) === 1) setImmediate(() => resolve(lines.join('\n')));
      });
      line.once('close', () => resolve(lines.length ? lines.join('\n') : undefined));
      line.once('SIGINT', () => reject(new CliError('interrupted', 130)));
      line.on('SIGTSTP', () => {
        suspend(terminal);
        // A line already typed, its answer settling, wins.
        continued = () => lines.length === 0 && resolve(RESUMED);
      });
      line.once('error', reject);
    });
  } finally {
    process.off('SIGCONT', onContinue);
    line.close();
  }
}

/**
 * Ctrl-Z at a prompt: the job stopped, as the terminal would stop it (the whole process group: a
 * `courier … | jq` or an `npx courier` stops whole, or its shell would wait on), the terminal as
 * the shell expects it (echoing) meanwhile, and raw again, not echoing, the moment the command
 * runs. Unlike readline's own suspension, this never leaves the terminal echoing where no stop
 * happens: the kernel discards the stop of an orphaned process group (under `script`, say, where
 * nothing could resume it), and then process.kill returns at once; otherwise it returns once the
 * process is continued (after a `bg`, raw mode stops it again, SIGTTOU, until a `fg`).
 */
function suspend(terminal: ReadStream): void {
  terminal.setRawMode(false);
  process.kill(0, 'SIGTSTP');
  terminal.setRawMode(true);
}
