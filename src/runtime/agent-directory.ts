import type { Store } from '../store/ports.js';
import type { AgentRecord } from '../store/records.js';

interface Entry {
  agent: AgentRecord;
  expiresAt: number;
}

/**
 * Agents by organization and id, read through a small cache: every chat turn needs its agent, and the
 * store read (and the JSON of its settings) is on the latency path of the first token. Entries live
 * `ttlMs` at most, and are dropped when the agent changes: at once when this process changes it
 * (AgentService calls `invalidate`), and on every process when the store feed tells of the change
 * (src/runtime/access-changes.ts).
 * At most `maxEntries` are kept; the oldest go first.
 */
export class AgentDirectory {
  private readonly entries = new Map<string, Entry>();
  /** Published agents by public key (public endpoints: every request names the key, not the agent). */
  private readonly published = new Map<string, Entry>();
  /** Agents by organization and exact name (the `model` of the OpenAI-compatible endpoints). */
  private readonly named = new Map<string, Entry>();

  constructor(private readonly store: Store, private readonly ttlMs = 2_000, private readonly maxEntries = 10_000) {}

  /**
   * The agent `agentId` of `orgId` (undefined when there is none): synchronously from the cache, else
   * a promise of the store read. Returns the cached record itself: callers must not modify it.
   */
  get(orgId: string, agentId: string): AgentRecord | undefined | Promise<AgentRecord | undefined> {
    const key = `${orgId}/${agentId}`;
    const hit = this.entries.get(key);
    const now = Date.now();
    if (hit !== undefined && hit.expiresAt > now) return hit.agent;
    return this.store.agents.get(orgId, agentId).then((agent) => {
      if (agent !== undefined) this.remember(key, agent, now);
      else this.entries.delete(key);
      return agent;
    });
  }

  /**
   * The published agent of `publicKey` (undefined when no agent is published under it), read through the
   * same kind of cache: synchronously from it, else a promise of the store read.
   */
  byPublicKey(publicKey: string): AgentRecord | undefined | Promise<AgentRecord | undefined> {
    const hit = this.published.get(publicKey);
    const now = Date.now();
    if (hit !== undefined && hit.expiresAt > now) return hit.agent;
    return this.store.agents.findByPublicKey(publicKey).then((agent) => {
      if (agent !== undefined) this.rememberIn(this.published, publicKey, agent, now);
      else this.published.delete(publicKey);
      return agent;
    });
  }

  /**
   * The organization's agent named exactly `name` (the oldest when several are: AgentsPort.findByName), or
   * undefined, read through the same kind of cache: synchronously from it, else a promise of the store read.
   */
  byName(orgId: string, name: string): AgentRecord | undefined | Promise<AgentRecord | undefined> {
    const key = `${orgId}/${name}`;
    const hit = this.named.get(key);
    const now = Date.now();
    if (hit !== undefined && hit.expiresAt > now) return hit.agent;
    return this.store.agents.findByName(orgId, name).then((found) => {
      const agent = found[0];
      if (agent !== undefined) this.rememberIn(this.named, key, agent, now);
      else this.named.delete(key);
      return agent;
    });
  }

  /**
   * Forgets the agent (after this instance changed or deleted it), also under its public key, and every
   * name lookup (a rename or a delete can change which agent a name finds).
   */
  invalidate(orgId: string, agentId: string): void {
    const key = `${orgId}/${agentId}`;
    const known = this.entries.get(key)?.agent.public_key;
    if (known) this.published.delete(known);
    this.entries.delete(key);
    this.named.clear();
  }

  /** Forgets what is cached under a public key (the key was unpublished: it stops at once). */
  invalidatePublicKey(publicKey: string): void {
    this.published.delete(publicKey);
  }

  /** Forgets every cached agent (the feed had a gap: changes may have been missed). */
  clear(): void {
    this.entries.clear();
    this.published.clear();
  }

  private remember(key: string, agent: AgentRecord, now: number): void {
    this.rememberIn(this.entries, key, agent, now);
  }

  private rememberIn(map: Map<string, Entry>, key: string, agent: AgentRecord, now: number): void {
    map.delete(key); // re-inserted last: the Map stays ordered oldest first
    map.set(key, { agent, expiresAt: now + this.ttlMs });
    if (map.size > this.maxEntries) {
      const oldest = map.keys().next().value;
      if (oldest !== undefined) map.delete(oldest);
    }
  }
}
