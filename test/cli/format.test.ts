import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { InvalidArgumentError } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliError } from '../../src/cli/errors.ts';
import { duration, printable, table, timestamp } from '../../src/cli/format.ts';
import { collect, isoTime, positiveInteger, readPayload } from '../../src/cli/input.ts';
import { type StandingCounts, standingColumns } from '../../src/cli/message-columns.ts';
import { progressBar } from '../../src/cli/progress.ts';

describe('table', () => {
  it('aligns columns, right-aligns numbers, cuts long cells and neutralizes control characters', () => {
    const rows = [
      { name: 'a', n: 5, text: 'short' },
      { name: 'longer', n: 1234, text: '\u001b[31mred\nnext line and much more text' },
    ];
    const out = table(
      [
        { header: 'NAME', value: (r: (typeof rows)[number]) => r.name },
        { header: 'N', value: (r) => String(r.n), align: 'right' },
        { header: 'TEXT', value: (r) => r.text, max: 12 },
      ],
      rows,
    );
    expect(out).toBe(
      ['NAME       N  TEXT', 'a          5  short', 'longer  1234   [31mred ne…', ''].join('\n'),
    );
    expect(printable('a\r\n\u0007b\u009bc')).toBe('a b c');
  });

  it('counts where messages stand, a dash for each count a row lacks (an older server sends none)', () => {
    type Row = { counts?: StandingCounts };
    const rows: Row[] = [{ counts: { success: 3, pending: 1, sending: 0, fail: 2 } }, {}];
    expect(
      table(
        standingColumns((r: Row) => r.counts),
        rows,
      ),
    ).toBe(
      [
        'DELIVERED  PENDING  SENDING  FAILED',
        '        3        1        0       2',
        '        -        -        -       -',
        '',
      ].join('\n'),
    );
  });
});

describe('values', () => {
  it('formats durations and timestamps for people', () => {
    expect([0, 850, 1500, 59_000, 150_000, 3_900_000, 7_200_000, 266_400_000].map(duration)).toEqual([
      '0 ms',
      '850 ms',
      '1.5 s',
      '59 s',
      '2m 30s',
      '1h 5m',
      '2h',
      '3d 2h',
    ]);
    expect(timestamp('2026-01-01T12:00:05.123Z')).toBe('2026-01-01 12:00:05Z');
    expect(timestamp('not a time')).toBe('not a time');
  });

  it('parses ISO times to UTC and refuses anything else', () => {
    expect(isoTime('2026-01-31')).toBe('2026-01-31T00:00:00.000Z');
    expect(isoTime('2026-01-31T12:30')).toBe('2026-01-31T12:30:00.000Z');
    expect(isoTime('2026-01-31 12:30:15.5+01:00')).toBe('2026-01-31T11:30:15.500Z');
    expect(isoTime('2026-01-31T12:00:00z')).toBe('2026-01-31T12:00:00.000Z');
    for (const bad of ['yesterday', '2026-02-30', '2026-13-01', '2026-01-01T25:00', '1767225600', '']) {
      expect(() => isoTime(bad), bad).toThrow(InvalidArgumentError);
    }
  });

  it('parses counts and repeatable values', () => {
    expect(positiveInteger('20')).toBe(20);
    for (const bad of ['0', '-1', '1.5', 'ten', '1e3']) expect(() => positiveInteger(bad)).toThrow();
    expect(collect('c', collect('a,b'))).toEqual(['a', 'b', 'c']);
    expect(collect('a, b,,c')).toEqual(['a', 'b', 'c']);
    // No name at all would have meant no channel: the message would go to unfiltered endpoints.
    for (const empty of [',', '', ' , ']) expect(() => collect(empty)).toThrow('expected a name');
  });
});

describe('output into a pipe its reader closed', () => {
  it('ends quietly (exit 0), as `| head` expects', async () => {
    const format = new URL('../../src/cli/format.ts', import.meta.url).href;
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `(await import(${JSON.stringify(format)})).printJson('x'.repeat(1 << 22))`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    // The reader takes the first chunk and leaves, as head does.
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  });
});

describe('readPayload', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'courier-cli-'));
  });
  afterAll(() => rm(dir, { recursive: true }));

  it('reads inline JSON, a file or standard input', async () => {
    await writeFile(join(dir, 'p.json'), '{"from":"file"}');
    expect(await readPayload('{"a":1}')).toEqual({ a: 1 });
    expect(await readPayload(`@${join(dir, 'p.json')}`)).toEqual({ from: 'file' });
    expect(await readPayload('-', Readable.from([Buffer.from('{"from":'), Buffer.from('"stdin"}')]))).toEqual(
      {
        from: 'stdin',
      },
    );
  });

  it('refuses what the API would refuse, as usage errors', async () => {
    const failure = (arg: string) => readPayload(arg, Readable.from(['[]'])).catch((e: CliError) => e);
    for (const [arg, message] of [
      ['{"a":', /^invalid JSON in the payload argument/],
      ['"text"', /payload argument must be a JSON object/],
      ['null', /must be a JSON object/],
      ['-', /^the payload in standard input must be a JSON object/],
      [`@${join(dir, 'missing.json')}`, /^cannot read payload file .*missing\.json: ENOENT/],
      // JSON.parse would round these, and the API would then see an exact number.
      [
        '{"id":1234567890123456789}',
        /^the payload in the payload argument contains the number 1234567890123456789/,
      ],
      ['{"v":1e400}', /^the payload in the payload argument contains a number out of range/],
    ] as const) {
      const error = await failure(arg);
      expect(error).toBeInstanceOf(CliError);
      expect((error as CliError).exitCode).toBe(2);
      expect((error as CliError).message).toMatch(message);
    }
  });
});

describe('progressBar', () => {
  const stream = (isTTY: boolean) => {
    const writes: string[] = [];
    return { isTTY, columns: 60, writes, write: (text: string) => writes.push(text) };
  };

  it('draws and advances on a terminal, then erases itself', () => {
    const tty = stream(true);
    const bar = progressBar(tty, 4, 'replayed');
    bar.update(2);
    bar.update(4);
    bar.finish();
    const shown = tty.writes.map((w) => w.replaceAll('\r', '<CR>').replaceAll('\u001b[K', '<EL>'));
    expect(shown).toHaveLength(4);
    expect(shown[0]).toMatch(/^<CR>\[-+\] 0\/4 replayed<EL>$/);
    expect(shown[1]).toMatch(/^<CR>\[#+-+\] 2\/4 replayed<EL>$/);
    expect(shown[2]).toMatch(/^<CR>\[#+\] 4\/4 replayed<EL>$/);
    expect(tty.writes[2]!.length).toBeLessThan(60); // one line of the 60-column terminal
    expect(shown[3]).toBe('<CR><EL>');
  });

  it('writes nothing when the stream is not a terminal, or there is nothing to do', () => {
    const pipe = stream(false);
    progressBar(pipe, 4, 'replayed').update(1);
    const tty = stream(true);
    progressBar(tty, 0, 'replayed').finish();
    expect([...pipe.writes, ...tty.writes]).toEqual([]);
  });
});
