import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TEST_DATABASE_URL } from './databases.ts';
import { freePort } from './ports.ts';

const BINARY = '/usr/sbin/pgbouncer';

export interface PgBouncer {
  /** The test database's URL, through PgBouncer. */
  url: string;
  /** PgBouncer's log so far. */
  log: () => string;
  stop(): Promise<void>;
}

/**
 * A PgBouncer on a loopback port in front of the test database, pooling as `poolMode` says. It
 * logs in to PostgreSQL as the test URL's user, with its password if it has one, whoever
 * connects (auth_type any).
 */
export async function startPgBouncer(poolMode: 'session' | 'transaction'): Promise<PgBouncer> {
  if (!existsSync(BINARY)) {
    throw new Error(`PgBouncer is not installed (${BINARY}): apt-get install -y pgbouncer (.ci/run does)`);
  }
  // Another test may take the free port before PgBouncer binds it: then a new port.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(poolMode, await freePort());
    } catch (error) {
      if (attempt === 3 || !(error instanceof PortTaken)) throw error;
    }
  }
}

class PortTaken extends Error {}

async function startOnce(poolMode: string, port: number): Promise<PgBouncer> {
  const dir = mkdtempSync(join(tmpdir(), 'courier-pgbouncer-'));
  // PgBouncer refuses to run as root; as root it is started as postgres, who must reach its files.
  chmodSync(dir, 0o777);
  const logFile = join(dir, 'pgbouncer.log');
  const ini = join(dir, 'pgbouncer.ini');
  writeFileSync(
    ini,
    [
      '[databases]',
      `${serverDatabase()}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = any',
      `pool_mode = ${poolMode}`,
      `logfile = ${logFile}`,
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      'max_client_conn = 200',
      'default_pool_size = 40',
      '',
    ].join('\n'),
  );
  const asRoot = process.getuid?.() === 0;
  const child: ChildProcess = spawn(BINARY, asRoot ? ['-u', 'postgres', ini] : [ini], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  let failed: Error | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', (error) => {
      failed = error;
      resolve();
    });
  });
  const log = () => output + (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  const running = () => !failed && child.exitCode === null && child.signalCode === null;
  const stop = async () => {
    if (running()) {
      // SIGTERM shuts down at once; SIGINT would wait for every client to leave.
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 3_000);
      await exited;
      clearTimeout(killer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  // Its own line, not a connection: whatever took the port meanwhile would accept one too.
  const listening = `listening on 127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  while (!log().includes(listening)) {
    if (!running() || Date.now() > deadline) {
      const seen = `${log()}${failed ? `\n${failed.message}` : ''}`;
      await stop();
      if (seen.includes('Address already in use')) throw new PortTaken(seen);
      throw new Error(`PgBouncer did not start:\n${seen}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const url = new URL(TEST_DATABASE_URL);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return { url: url.toString(), log, stop };
}

/** The [databases] line: the test URL's server, database, user and password. */
function serverDatabase(): string {
  const server = new URL(TEST_DATABASE_URL);
  const database = decodeURIComponent(server.pathname.slice(1));
  const settings = {
    host: server.hostname,
    port: server.port || '5432',
    dbname: database,
    user: decodeURIComponent(server.username),
    password: decodeURIComponent(server.password),
  };
  const quoted = Object.entries(settings)
    .filter(([, value]) => value !== '')
    // PgBouncer's connection strings quote with ' and double one inside.
    .map(([key, value]) => `${key}='${value.replaceAll("'", "''")}'`);
  if (!/^[\w.-]+$/.test(database))
    throw new Error(`PgBouncer's test: a database name it takes unquoted, not ${database}`);
  return `${database} = ${quoted.join(' ')}`;
}
