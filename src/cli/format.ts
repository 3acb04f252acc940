/** Output of the operator commands: aligned tables for people, JSON for scripts. */

export interface Column<T> {
  header: string;
  value: (row: T) => string;
  /** Longer values are cut with an ellipsis (URLs, error texts). */
  max?: number;
  align?: 'left' | 'right';
}

// Receivers choose their response bodies and error texts: escape sequences in them must not
// reach the operator's terminal, and newlines would break the table's rows.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]+/g;

export function printable(text: string): string {
  return text.replace(CONTROL, ' ');
}

function cut(text: string, max: number | undefined): string {
  const chars = [...text];
  return max !== undefined && chars.length > max ? `${chars.slice(0, max - 1).join('')}…` : text;
}

/** Columns padded to their widest cell, two spaces apart, with a header row. */
export function table<T>(columns: readonly Column<T>[], rows: readonly T[]): string {
  const cells = rows.map((row) => columns.map((c) => cut(printable(c.value(row)), c.max)));
  const widths = columns.map((c, i) =>
    Math.max([...c.header].length, ...cells.map((r) => [...r[i]!].length)),
  );
  const line = (values: string[]) =>
    values
      .map((v, i) => {
        const pad = ' '.repeat(widths[i]! - [...v].length);
        return columns[i]!.align === 'right' ? pad + v : v + pad;
      })
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join('\n') + '\n';
}

/** `label  value` lines, the values lined up two spaces after the longest label. */
export function fieldLines(fields: readonly (readonly [string, string])[]): string[] {
  const width = Math.max(...fields.map(([label]) => label.length)) + 2;
  return fields.map(([label, value]) => `${label.padEnd(width)}${value}`);
}

// A key or value that could be read as more than one: quoted as JSON.
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is quoted
const AMBIGUOUS = /^$|[,="\\\u0000-\u001f\u007f-\u009f]|^\s|\s$/;
const quoted = (text: string): string => (AMBIGUOUS.test(text) ? JSON.stringify(text) : text);

/** `key=value, …` of an application's or endpoint's metadata (quoted where ambiguous), `none` without any. */
export const metadataText = (metadata: Record<string, string> | undefined): string => {
  const pairs = Object.entries(metadata ?? {});
  return pairs.length === 0
    ? 'none'
    : pairs.map(([key, value]) => `${quoted(key)}=${quoted(value)}`).join(', ');
};

/** `status` is Courier's; Svix's `disabled` alone cannot tell a paused endpoint from a disabled one. */
export const endpointStatus = (e: { status?: string; disabled: boolean }): string =>
  e.status ?? (e.disabled ? 'disabled' : 'enabled');

/** A rate limit as the tables show it: `50/s`, `-` for none of its own. */
export const perSecond = (rateLimit: number | null | undefined): string =>
  rateLimit ? `${rateLimit}/s` : '-';

/** Retry-policy overrides that change something: not null, not {} (which the API stores as given). */
export const overridesGiven = (overrides: object | null | undefined): overrides is object =>
  overrides !== null && overrides !== undefined && Object.keys(overrides).length > 0;

/** A command line to print as a hint: a name starting with - comes after --, not read as an option. */
export const commandLine = (command: string, ...names: string[]): string =>
  [command, ...(names.some((name) => name.startsWith('-')) ? ['--', ...names] : names)].join(' ');

/**
 * An operator command's result on stdout. A reader that left early (`| head`) ends the output, not
 * the command with an error: the rest is not wanted.
 */
let pipeGuarded = false;
function print(text: string): void {
  if (!pipeGuarded) {
    pipeGuarded = true;
    process.stdout.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      process.exit(0);
    });
  }
  process.stdout.write(text);
}

/** `--json` output: the API's own objects, indented, and nothing else on stdout. */
export function printJson(value: unknown): void {
  print(`${JSON.stringify(value, null, 2)}\n`);
}

/** What a command says it did, a line each; what the server sent made printable, as in a table. */
export function printLines(...lines: string[]): void {
  print(lines.map((line) => `${printable(line)}\n`).join(''));
}

/** Writes the JSON for `--json`, else the table (or `empty` when there are no rows). */
export function output<T>(
  json: boolean | undefined,
  value: unknown,
  columns: readonly Column<T>[],
  rows: readonly T[],
  empty: string,
): void {
  if (json) printJson(value);
  else print(rows.length === 0 ? `${empty}\n` : table(columns, rows));
}

/** 850 ms, 1.5 s, 2m 30s, 1h 5m, 3d 2h. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${Number((ms / 1000).toFixed(1))} s`;
  const units: [string, number][] = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ];
  const i = units.findIndex(([, size]) => ms >= size);
  const [bigName, big] = units[i]!;
  const [smallName, small] = units[i + 1]!;
  const whole = Math.floor(ms / big);
  const rest = Math.floor((ms - whole * big) / small);
  return rest ? `${whole}${bigName} ${rest}${smallName}` : `${whole}${bigName}`;
}

/** An API timestamp in UTC to the second: 2026-01-01 12:00:05Z. */
export function timestamp(iso: string): string {
  const ms = Date.parse(iso);
  return Number.isNaN(ms)
    ? iso
    : new Date(ms)
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z');
}

/** `-` for absent values, so every column lines up. */
export const orDash = (value: string | number | null | undefined): string =>
  value === null || value === undefined || value === '' ? '-' : String(value);

/** `ep_… (main)`: an id with the uid its owner knows it by. */
export const idAndUid = (row: { id: string; uid: string | null }): string =>
  row.uid ? `${row.id} (${row.uid})` : row.id;
