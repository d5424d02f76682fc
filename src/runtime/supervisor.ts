import { createActor, type Actor, type ActorLogic, type AnyActorLogic, type AnyActorRef, type EventObject, type Snapshot } from 'xstate';
import type { conversationMachine } from '../../actors/conversation/conversation.machine.js';
import type { ConversationInput } from '../../actors/conversation/conversation.types.js';
import type { TurnHandle } from '../../actors/turn/turn.types.js';
import type { ConversationStatus } from '../vocabulary/conversation.js';
import type { Logger } from '../log/logger.js';

/** XState's clock interface (setTimeout/clearTimeout), as `createActor` accepts it. */
type Clock = NonNullable<Parameters<typeof createActor>[1]> extends { clock?: infer C } ? C : never;

/** The provided conversation machine the supervisor runs. */
export type ConversationLogic = typeof conversationMachine;
export type ConversationActor = Actor<ConversationLogic>;

/** What the supervisor needs to (re)create a conversation actor: its stored id and status. */
export interface ConversationSeed {
  id: string;
  status: ConversationStatus;
}

export interface SupervisorOptions {
  logic: ConversationLogic;
  logger: Logger;
  maxQueued: number;
  idleMs: number;
  maxSteps: number;
  /** XState clock for the actors' timers (tests pass a SimulatedClock); restart backoff uses real time. */
  clock?: Clock;
  /** Called after an actor crashed and was dropped, with its conversation id. */
  onCrash?: (conversationId: string, err: unknown) => void;
  /** Called after an actor ran until idle and was dropped (its conversation's lease is released then). */
  onUnloaded?: (conversationId: string) => void;
  /** First restart backoff after a crash, ms; doubles per consecutive crash up to `maxBackoffMs`. */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** A crash record is forgotten this long after its restart time, ms (default 10 minutes). */
  crashMemoryMs?: number;
  /** At most this many crash records are kept; the oldest go first (default 10,000). */
  maxCrashRecords?: number;
  /**
   * Actor systems the conversation actors are spread over, round robin (default 256): see
   * {@link Supervisor}. More systems make an actor's stop cheaper, fewer save memory.
   */
  systems?: number;
}

/** The one command a system root takes: stop one of its conversation actors (XState stops children only through their parent). */
interface StopChild extends EventObject {
  type: 'supervisor.stopChild';
  child: AnyActorRef;
}

/**
 * The root of one actor system: it owns the conversation actors created under it and only ever stops
 * one of them. Their completion and error events (XState relays those to a parent) are ignored here:
 * the supervisor observes each actor itself.
 */
const systemRootLogic: ActorLogic<Snapshot<undefined>, StopChild> = {
  transition: (snapshot, event, scope) => {
    if (event.type === 'supervisor.stopChild') scope.stopChild(event.child);
    return snapshot;
  },
  getInitialSnapshot: () => ({ status: 'active', output: undefined, error: undefined }),
  getPersistedSnapshot: (snapshot) => snapshot,
};

/**
 * The registry of live conversation actors (DESIGN.md "Actors"): a plain Map, not XState children
 * (spawning under one parent machine copies its children object each time: O(N) per spawn).
 *
 * Memory: a root XState actor brings its own actor system (a scheduler, registries and about fifteen
 * closures: 1.7-1.8 KB of heap per conversation, measured with 2,000 actors here, of 5.7 KB for an idle
 * one). So each conversation actor is created under one of `systems` root actors ({@link systemRootLogic}),
 * round robin, and shares that root's system. Not one system for all: stopping an actor makes XState's
 * scheduler walk every pending timer of its system (`cancelAll`), and every idle conversation has one, so
 * a system per N/`systems` conversations keeps that walk short. An actor that
 * reaches its final state (idle unload) is dropped and rehydrated from the store on the next event. An
 * actor that crashes is logged and dropped; the next `acquire` recreates it from its last stored state
 * after a capped exponential backoff. The event that crashed it is never replayed.
 */
export class Supervisor {
  private readonly actors = new Map<string, ConversationActor>();
  private readonly crashes = new Map<string, { count: number; retryAt: number }>();
  private readonly opts: Required<Omit<SupervisorOptions, 'clock' | 'onCrash' | 'onUnloaded'>> & Pick<SupervisorOptions, 'clock' | 'onCrash' | 'onUnloaded'>;
  /** Root actors of the actor systems, created on first use. */
  private readonly roots: AnyActorRef[] = [];
  private nextRoot = 0;

  constructor(opts: SupervisorOptions) {
    this.opts = { baseBackoffMs: 100, maxBackoffMs: 5000, crashMemoryMs: 10 * 60_000, maxCrashRecords: 10_000, systems: 256, ...opts };
    if (!(Number.isInteger(this.opts.systems) && this.opts.systems >= 1)) throw new RangeError(`systems must be a positive integer, got ${this.opts.systems}`);
  }

  /** The root to create the next actor under: round robin over `systems` roots. */
  private root(): AnyActorRef {
    const i = this.nextRoot;
    this.nextRoot = (i + 1) % this.opts.systems;
    let root = this.roots[i];
    if (root === undefined) {
      root = createActor(systemRootLogic, this.opts.clock ? { clock: this.opts.clock } : {});
      root.start();
      this.roots[i] = root;
    }
    return root;
  }

  /** Stops a conversation actor through its root (XState refuses `stop()` on an actor with a parent). */
  private stopActor(actor: ConversationActor): void {
    actor._parent!.send({ type: 'supervisor.stopChild', child: actor } satisfies StopChild);
  }

  /**
   * The live actor of a conversation, created (rehydrated from `seed`) when there is none: synchronously,
   * except after a crash of that conversation, when the promise resolves once its restart backoff passed.
   */
  acquire(seed: ConversationSeed): ConversationActor | Promise<ConversationActor> {
    const live = this.actors.get(seed.id);
    if (live) return live;
    const crash = this.crashes.get(seed.id);
    if (crash) {
      const wait = crash.retryAt - Date.now();
      if (wait > 0) {
        return new Promise<void>((r) => setTimeout(r, wait)).then(() => this.actors.get(seed.id) ?? this.spawn(seed));
      }
    }
    return this.spawn(seed);
  }

  /**
   * Creates the actor of a conversation that was just created for `firstTurn` (so none is live and it has
   * no crash record), already answering that turn: the machine's `firstTurn` input, which spares the
   * `turn.requested` event and the idle state in between.
   *
   * @throws Error when an actor of that conversation is live (the id is not new), or what the machine
   * throws as it starts.
   */
  startNew(seed: ConversationSeed, firstTurn: TurnHandle): ConversationActor {
    if (this.actors.has(seed.id)) throw new Error(`conversation ${seed.id} already has a live actor`);
    return this.spawn(seed, firstTurn);
  }

  /**
   * Stops and forgets the live actor of a conversation (its state and the store's disagree: a status
   * write failed); the next `acquire` rehydrates it from the store. Its running turn, if any, is aborted.
   */
  evict(conversationId: string): void {
    const actor = this.actors.get(conversationId);
    if (actor === undefined) return;
    this.actors.delete(conversationId);
    this.stopActor(actor);
  }

  /** The live actor, if loaded. */
  peek(conversationId: string): ConversationActor | undefined {
    return this.actors.get(conversationId);
  }

  get size(): number {
    return this.actors.size;
  }

  private spawn(seed: ConversationSeed, firstTurn?: TurnHandle): ConversationActor {
    const input: ConversationInput = {
      conversationId: seed.id, status: seed.status, maxQueued: this.opts.maxQueued,
      idleMs: this.opts.idleMs, maxSteps: this.opts.maxSteps,
    };
    if (firstTurn !== undefined) input.firstTurn = firstTurn;
    const actor = createActor(this.opts.logic as AnyActorLogic, { input, parent: this.root() }) as unknown as ConversationActor;
    actor.subscribe({
      complete: () => {
        if (this.actors.get(seed.id) !== actor) return;
        this.actors.delete(seed.id);
        // It ran until idle: its crash history no longer says anything.
        this.crashes.delete(seed.id);
        this.opts.logger.debug({ conversation_id: seed.id }, 'conversation unloaded');
        this.opts.onUnloaded?.(seed.id);
      },
      error: (err) => this.crashed(seed.id, actor, err),
    });
    this.actors.set(seed.id, actor);
    actor.start();
    return actor;
  }

  private crashed(id: string, actor: ConversationActor, err: unknown): void {
    if (this.actors.get(id) === actor) this.actors.delete(id);
    const prev = this.crashes.get(id);
    const count = (prev?.count ?? 0) + 1;
    const backoff = Math.min(this.opts.maxBackoffMs, this.opts.baseBackoffMs * 2 ** (count - 1));
    this.crashes.delete(id); // re-inserted last: the Map stays ordered oldest first
    this.crashes.set(id, { count, retryAt: Date.now() + backoff });
    this.pruneCrashes(Date.now());
    this.opts.logger.error({ err, conversation_id: id, crash_count: count, restart_in_ms: backoff }, 'conversation actor crashed');
    this.opts.onCrash?.(id, err);
  }

  /** Crash records that are old or past the cap are dropped, so the map cannot grow without bound. */
  private pruneCrashes(now: number): void {
    for (const [id, rec] of this.crashes) {
      if (this.crashes.size <= this.opts.maxCrashRecords && rec.retryAt + this.opts.crashMemoryMs >= now) break;
      this.crashes.delete(id);
    }
  }

  /** Conversations with a crash record (for tests and metrics). */
  get crashRecords(): number {
    return this.crashes.size;
  }

  /** Stops every actor (shutdown). */
  stopAll(): void {
    for (const actor of this.actors.values()) this.stopActor(actor);
    this.actors.clear();
  }

  /** Actor systems created so far (at most `systems`). */
  get systemCount(): number {
    return this.roots.length;
  }
}
