import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
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
 * logs in to PostgreSQL as the test URL's user, whoever connects (auth_type any).
 */
export async function startPgBouncer(poolMode: 'session' | 'transaction'): Promise<PgBouncer> {
  if (!existsSync(BINARY)) {
    throw new Error(`PgBouncer is not installed (${BINARY}): apt-get install -y pgbouncer (.ci/run does)`);
  }
  const server = new URL(TEST_DATABASE_URL);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'courier-pgbouncer-'));
  // PgBouncer refuses to run as root; as root it is started as postgres, who must reach its files.
  chmodSync(dir, 0o777);
  const logFile = join(dir, 'pgbouncer.log');
  const ini = join(dir, 'pgbouncer.ini');
  const database = server.pathname.slice(1);
  writeFileSync(
    ini,
    [
      '[databases]',
      `${database} = host=${server.hostname} port=${server.port || 5432} dbname=${database} user=${decodeURIComponent(server.username)}`,
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
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const log = () => output + (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 10_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      const seen = log();
      await stop();
      throw new Error(`PgBouncer did not start:\n${seen}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const url = new URL(TEST_DATABASE_URL);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return { url: url.toString(), log, stop };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
