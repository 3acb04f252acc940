/** The Courier side of the chaos run: one `courier serve` (API + workers) and N `courier worker`. */
import { courierReady, type Proc, spawnCourier, stopProc } from './processes.ts';

export interface CourierSettings {
  databaseUrl: string;
  schema: string;
  apiPort: number;
  adminToken: string;
  maxAttempts: number;
  requestTimeoutMs: number;
  leaseMs: number;
}

/** A fault as it happened, for attributing duplicates: [from, to] is when it could lose work. */
export interface FaultEvent {
  kind: 'worker kill' | 'api restart' | 'pg restart';
  from: number;
  to: number;
  detail: string;
}

export function courierEnv(s: CourierSettings): Record<string, string> {
  return {
    COURIER_DATABASE_URL: s.databaseUrl,
    COURIER_SCHEMA: s.schema,
    COURIER_PORT: String(s.apiPort),
    COURIER_ADMIN_TOKEN: s.adminToken,
    COURIER_ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8',
    // Fast retries so whole retry histories fit in the run.
    COURIER_RETRY_BASE: '200ms',
    COURIER_RETRY_CAP: '2s',
    COURIER_MAX_ATTEMPTS: String(s.maxAttempts),
    COURIER_RETRY_WINDOW: '1h',
    COURIER_REQUEST_TIMEOUT: `${s.requestTimeoutMs}ms`,
    COURIER_LEASE: `${s.leaseMs}ms`,
    // Endpoints answering 410 to every message must not be paused: their deliveries would be held.
    COURIER_PAUSE_AFTER: '1000000',
    COURIER_LOG_LEVEL: 'info',
  };
}

export class Cluster {
  api!: Proc;
  readonly workers: Proc[] = [];
  readonly faults: FaultEvent[] = [];
  /** Output of processes that were killed or stopped, for the post-mortem. */
  readonly graveyard: string[] = [];
  private spawned = 0;

  constructor(
    private readonly settings: CourierSettings,
    private readonly workerCount: number,
  ) {}

  async start(): Promise<void> {
    // The API first: it applies the migrations the workers then find done.
    this.api = spawnCourier('serve', 'serve', courierEnv(this.settings));
    await courierReady(this.api, 'serve');
    const workers = Array.from({ length: this.workerCount }, () => this.spawnWorker());
    await Promise.all(workers.map((w) => courierReady(w, 'worker')));
    this.workers.push(...workers);
  }

  private spawnWorker(): Proc {
    return spawnCourier(`worker-${++this.spawned}`, 'worker', courierEnv(this.settings));
  }

  /** kill -9 one worker (requests in flight are lost: their leases must expire), then start another. */
  async killWorker(random: () => number): Promise<void> {
    const index = Math.floor(random() * this.workers.length);
    const victim = this.workers[index]!;
    const at = Date.now();
    await stopProc(victim, 'SIGKILL');
    this.graveyard.push(`--- ${victim.name} (SIGKILL)\n${victim.output().slice(-4000)}`);
    this.faults.push({ kind: 'worker kill', from: at, to: at, detail: victim.name });
    const fresh = this.spawnWorker();
    this.workers[index] = fresh;
    await courierReady(fresh, 'worker');
  }

  /** SIGTERM the API process (graceful: its workers finish or give back what they hold), start it again. */
  async restartApi(): Promise<void> {
    const from = Date.now();
    await stopProc(this.api, 'SIGTERM');
    this.graveyard.push(`--- serve (SIGTERM)\n${this.api.output().slice(-4000)}`);
    this.api = spawnCourier('serve', 'serve', courierEnv(this.settings));
    await courierReady(this.api, 'serve');
    this.faults.push({ kind: 'api restart', from, to: Date.now(), detail: 'serve restarted' });
  }

  async stop(): Promise<void> {
    await Promise.all([this.api, ...this.workers].filter(Boolean).map((p) => stopProc(p, 'SIGKILL')));
  }

  /** Processes that died without being told to. */
  crashed(): Proc[] {
    return [this.api, ...this.workers].filter((p) => p && !p.alive());
  }
}
