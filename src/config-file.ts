/** The COURIER_CONFIG file: a JSON object of COURIER_* keys, read into what the variables would say. */
import { readFileSync } from 'node:fs';
import { ConfigError } from './config-error.ts';
import { OPTIONS, type OptionSpec } from './config-options.ts';

/** Variables' values by name, as the environment gives them. */
export type ConfigSource = Record<string, string | undefined>;

/** The COURIER_CONFIG file's keys, each as its variable would be written. */
export function readConfigFile(path: string): ConfigSource {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError('COURIER_CONFIG', `cannot read ${path}: ${(error as Error).message}`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError('COURIER_CONFIG', `${path} must hold a JSON object of COURIER_* keys`);
  }
  const known = new Map(OPTIONS.map((o) => [o.name, o]));
  const source: ConfigSource = {};
  for (const [key, value] of Object.entries(parsed)) {
    const option = known.get(key);
    if (!option) throw new ConfigError('COURIER_CONFIG', `unknown key ${key} in ${path}`);
    source[key] = fileValue(option, value, path);
  }
  return source;
}

const isScalar = (value: unknown): value is string | number | boolean =>
  typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';

/** A file's value as the variable would be written: a list's JSON array joined by its separator. */
function fileValue(option: OptionSpec, value: unknown, path: string): string {
  if (isScalar(value)) return String(value);
  if (Array.isArray(value) && option.list) {
    const odd = value.find((item) => typeof item !== 'string');
    if (odd === undefined) return value.join(option.list);
    throw new ConfigError(option.name, `${path}: a list of strings, not one holding ${JSON.stringify(odd)}`);
  }
  const expected = option.list ? 'a string or a JSON array of strings' : 'a string, number or boolean';
  throw new ConfigError(option.name, `${path}: expected ${expected}, not ${JSON.stringify(value)}`);
}
