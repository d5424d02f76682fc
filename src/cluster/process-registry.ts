/**
 * The processes serving one store, as each of them sees the others (DESIGN.md "Several processes"):
 * every process registers itself with the address its neighbours reach it at, renews a heartbeat, and
 * takes a neighbour whose heartbeat stopped for `deadAfterMs` for dead: its record is removed and the
 * `onDead` handlers take its work over (webhook deliveries, documents being ingested, conversations).
 *
 * A neighbour is also dead at once, without waiting, when its address answers with another process's id
 * (it restarted there), refuses the connection while its record does not say it drains (a draining
 * process stops listening, but lives on until its turns finish and it removes its record), or when the
 * process that replaces it says so (PARLEY_PROCESSES: the primary passes the id of the child that crashed
 * to its replacement). A neighbour that does not answer in time is not known dead: it may be paused; its
 * heartbeat decides.
 */
import type { Logger } from '../log/logger.js';
import type { ProcessesPort } from '../store/ports.js';
import type { LeaseOwner, ProcessRecord } from '../store/records.js';
import { PeerUnreachable, type PeerClient } from './peer-client.js';

/** Options of {@link ProcessRegistry}. */
export interface ProcessRegistryOptions {
  /** How often this process renews its heartbeat and reads the others', ms. */
  heartbeatMs: number;
  /** A neighbour whose heartbeat is older than this is dead, ms (the lease time). */
  deadAfterMs: number;
  logger: Logger;
  /** Current time, ms (default Date.now). */
  now?: () => number;
}

/** The path of the internal identity route (src/transport/http/routes/internal.ts). */
export const WHOAMI_PATH = '/internal/v1/whoami';

/** See the module comment. */
export class ProcessRegistry {
  private others: ProcessRecord[] = [];
  private readonly deadHandlers: Array<(id: string) => Promise<void>> = [];
  private timer: NodeJS.Timeout | undefined;
  private peers: PeerClient | undefined;
  private drainingAt: string | null = null;
  private readonly now: () => number;
  private stopped = false;

  constructor(private readonly processes: ProcessesPort, readonly self: LeaseOwner, private readonly opts: ProcessRegistryOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** Adds a handler called with the id of every neighbour found dead (once each); it is awaited. */
  onDead(handler: (id: string) => Promise<void>): void {
    this.deadHandlers.push(handler);
  }

  /**
   * Registers this process, declares `replaces` dead (the process this one replaces), probes every
   * registered neighbour once (one that answers as another process is dead), and starts the heartbeat.
   * Throws what the store throws.
   */
  async start(peers: PeerClient, replaces?: string): Promise<void> {
    this.peers = peers;
    const at = new Date(this.now()).toISOString();
    await this.processes.register({ id: this.self.id, url: this.self.url, started_at: at, heartbeat_at: at, draining_at: null });
    if (replaces !== undefined && replaces !== this.self.id) await this.declareDead(replaces, 'replaced by this process');
    const others = (await this.processes.list()).filter((p) => p.id !== this.self.id);
    await Promise.all(others.map(async (p) => {
      const gone = await this.gone(p);
      if (gone !== undefined) await this.declareDead(p.id, gone);
    }));
    await this.tick();
    this.timer = setInterval(() => { void this.tick(); }, this.opts.heartbeatMs);
    this.timer.unref();
  }

  /** The neighbours known alive at the last heartbeat (this process not included). */
  get neighbours(): readonly ProcessRecord[] {
    return this.others;
  }

  /** Processes known alive, this one included (at least 1). */
  get size(): number {
    return this.others.length + 1;
  }

  /** The address of process `id`, when it is known alive (this process included). */
  urlOf(id: string): string | undefined {
    if (id === this.self.id) return this.self.url;
    return this.others.find((p) => p.id === id)?.url;
  }

  /**
   * True when process `id` is dead for sure: not registered any more, or its address refuses connections
   * or answers as another process (it is then declared dead). A process that does not answer in time is
   * not known dead (false).
   */
  async isDead(id: string, url: string): Promise<boolean> {
    if (id === this.self.id) return false;
    const rec = (await this.processes.list()).find((p) => p.id === id);
    if (rec === undefined) return true;
    const gone = await this.gone(rec);
    if (gone === undefined) return false;
    await this.declareDead(id, gone);
    return true;
  }

  /**
   * This process begins a drain (it is about to stop listening): its record says so, so that neighbours
   * finding its address closed wait for its heartbeat instead of taking its work over.
   */
  async draining(): Promise<void> {
    this.drainingAt = new Date(this.now()).toISOString();
    await this.processes.markDraining(this.self.id, this.drainingAt).catch((err: unknown) => this.opts.logger.error({ err }, 'could not mark this process as draining'));
  }

  /** Stops the heartbeat and removes this process's record (a clean stop: its work needs no recovery). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.processes.remove(this.self.id).catch(() => {});
  }

  /** Renews the heartbeat, reads the neighbours, and declares those silent too long dead. */
  async tick(): Promise<void> {
    if (this.stopped) return;
    try {
      const at = new Date(this.now()).toISOString();
      if (!(await this.processes.heartbeat(this.self.id, at))) {
        // Taken for dead by a neighbour (this process stalled): its work was taken over; it serves on.
        this.opts.logger.warn({ process_id: this.self.id }, 'this process was taken for dead by a neighbour (a stall?); registering again');
        await this.processes.register({ id: this.self.id, url: this.self.url, started_at: at, heartbeat_at: at, draining_at: this.drainingAt });
      }
      const limit = new Date(this.now() - this.opts.deadAfterMs).toISOString();
      const all = (await this.processes.list()).filter((p) => p.id !== this.self.id);
      const alive: ProcessRecord[] = [];
      for (const p of all) {
        if (p.heartbeat_at < limit) await this.declareDead(p.id, `no heartbeat since ${p.heartbeat_at}`);
        else alive.push(p);
      }
      this.others = alive;
    } catch (err) {
      this.opts.logger.error({ err }, 'process heartbeat failed');
    }
  }

  /**
   * Why process `p` is gone for sure (another process answers at its address, or it refuses connections
   * and is not draining), else undefined.
   */
  private async gone(p: ProcessRecord): Promise<string | undefined> {
    if (this.peers === undefined) return undefined;
    try {
      const answer = await this.peers.request(p.url, 'GET', WHOAMI_PATH);
      const id = (answer.body as { id?: unknown } | null)?.id;
      return answer.status === 200 && typeof id === 'string' && id !== p.id ? `${p.url} answers as another process` : undefined;
    } catch (err) {
      if (err instanceof PeerUnreachable) return err.refused && p.draining_at === null ? `${p.url} refuses connections` : undefined;
      throw err;
    }
  }

  private async declareDead(id: string, why: string): Promise<void> {
    await this.processes.remove(id);
    this.others = this.others.filter((p) => p.id !== id);
    this.opts.logger.warn({ process_id: id, why }, 'a Parley process is gone; taking its work over');
    for (const h of this.deadHandlers) {
      try { await h(id); } catch (err) { this.opts.logger.error({ err, process_id: id }, 'taking over a gone process\'s work failed'); }
    }
  }
}
