import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, setup, SimulatedClock, waitFor, type AnyActorLogic } from 'xstate';
import { conversationMachine } from '../../actors/conversation/conversation.machine.js';
import type { ConversationEvent, ConversationInput } from '../../actors/conversation/conversation.types.js';
import type { TurnInput, TurnOutput } from '../../actors/turn/turn.types.js';

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (v: T) => void;
  reject: (e: unknown) => void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => { resolve = res; reject = rej; });
  return { promise, resolve, reject };
}

/**
 * A controllable `turn` stub: each started turn waits until the test ends it. Records the order turns
 * start in, their inputs, and the highest number running at once.
 */
function turnStub() {
  const pending = new Map<string, Deferred<TurnOutput>>();
  const started: string[] = [];
  const inputs: TurnInput[] = [];
  let running = 0;
  let maxRunning = 0;
  const logic = fromPromise<TurnOutput, TurnInput>(async ({ input }) => {
    started.push(input.turn.id);
    inputs.push(input);
    running += 1;
    maxRunning = Math.max(maxRunning, running);
    const d = deferred<TurnOutput>();
    pending.set(input.turn.id, d);
    try {
      return await d.promise;
    } finally {
      running -= 1;
      pending.delete(input.turn.id);
    }
  });
  return {
    logic,
    started,
    inputs,
    get maxRunning() { return maxRunning; },
    isRunning: (turnId: string) => pending.has(turnId),
    succeed(turnId: string): void {
      const d = pending.get(turnId);
      if (!d) throw new Error(`turn ${turnId} is not running (running: ${[...pending.keys()].join(', ')})`);
      d.resolve({ turnId, outcome: 'succeeded', finishReason: 'stop' });
    },
    crash(turnId: string, err: unknown = new Error('turn actor blew up')): void {
      const d = pending.get(turnId);
      if (!d) throw new Error(`turn ${turnId} is not running`);
      d.reject(err);
    },
  };
}

const BASE_INPUT: ConversationInput = { conversationId: 'conv_1', status: 'active', maxQueued: 2, idleMs: 1_000, maxSteps: 4 };

function start(input: Partial<ConversationInput> = {}) {
  const turns = turnStub();
  const clock = new SimulatedClock();
  const logic = conversationMachine.provide({ actors: { turn: turns.logic as unknown as AnyActorLogic } as never });
  const actor = createActor(logic, { input: { ...BASE_INPUT, ...input }, clock });
  actor.start();
  const send = (e: ConversationEvent) => actor.send(e);
  const handles = new Map<string, { id: string }>();
  const handle = (id: string) => { if (!handles.has(id)) handles.set(id, { id }); return handles.get(id)!; };
  const request = (turnId: string) => send({ type: 'turn.requested', turn: handle(turnId) });
  const withdraw = (turnId: string) => send({ type: 'turn.withdrawn', turnId });
  const snap = () => actor.getSnapshot();
  const activeId = () => snap().context.active?.id ?? null;
  /** Ends the running turn `turnId` and waits until the conversation has seen it end. */
  const finish = async (turnId: string) => {
    expect(activeId()).toBe(turnId);
    turns.succeed(turnId);
    await waitFor(actor, (s) => s.context.active?.id !== turnId, { timeout: 2_000 });
  };
  return { actor, clock, turns, send, request, withdraw, snap, activeId, finish, handle };
}

const queueIds = (c: ReturnType<typeof start>) => c.snap().context.queue.map((t) => t.id);

describe('conversation machine: starting turns', () => {
  it('starts idle with nothing running', () => {
    const c = start();
    expect(c.snap().value).toBe('idle');
    expect(c.snap().context).toMatchObject({ queue: [], active: null, lastTurn: null, status: 'active' });
  });

  it('turn.requested on an idle conversation starts the turn at once, with the turn object as input', () => {
    const c = start();
    c.request('t1');
    expect(c.snap().value).toBe('answering');
    expect(c.activeId()).toBe('t1');
    expect(c.snap().context.queue).toEqual([]);
    expect(c.turns.started).toEqual(['t1']);
    expect(c.turns.inputs[0]).toEqual({ turn: c.handle('t1'), maxSteps: 4 });
    // The very object the runtime sent, not a copy: the turn's steps work on it.
    expect(c.turns.inputs[0]!.turn).toBe(c.handle('t1'));
  });

  it('records the finished turn output in lastTurn and goes back to idle', async () => {
    const c = start();
    c.request('t1');
    await c.finish('t1');
    expect(c.snap().value).toBe('idle');
    expect(c.snap().context.lastTurn).toEqual({ turnId: 't1', outcome: 'succeeded', finishReason: 'stop' });
    expect(c.activeId()).toBeNull();
  });
});

describe('conversation machine: queue', () => {
  it('queues requests behind the running turn in order, up to maxQueued; the next is refused', () => {
    const c = start({ maxQueued: 2 });
    c.request('t1');
    c.request('t2');
    c.request('t3');
    expect(c.activeId()).toBe('t1');
    expect(queueIds(c)).toEqual(['t2', 't3']);

    const before = c.snap().context;
    expect(c.snap().can({ type: 'turn.requested', turn: c.handle('t4') })).toBe(false);
    c.request('t4');
    expect(c.snap().context).toEqual(before);
    expect(c.snap().value).toBe('answering');
  });

  it('maxQueued 0 allows the running turn and nothing behind it', () => {
    const c = start({ maxQueued: 0 });
    expect(c.snap().can({ type: 'turn.requested', turn: c.handle('t1') })).toBe(true);
    c.request('t1');
    expect(c.snap().can({ type: 'turn.requested', turn: c.handle('t2') })).toBe(false);
  });

  it('turn.withdrawn drops a queued turn: it never starts', async () => {
    const c = start({ maxQueued: 3 });
    c.request('t1');
    c.request('t2');
    c.request('t3');
    c.withdraw('t2');
    expect(queueIds(c)).toEqual(['t3']);
    await c.finish('t1');
    expect(c.activeId()).toBe('t3');
    await c.finish('t3');
    expect(c.turns.started).toEqual(['t1', 't3']);
    expect(c.snap().value).toBe('idle');
  });

  it('withdrawing the running turn leaves it to end itself (the runtime already withdrew the turn object)', () => {
    const c = start({ maxQueued: 3 });
    c.request('t1');
    c.request('t2');
    c.withdraw('t1');
    expect(c.activeId()).toBe('t1');
    expect(c.turns.isRunning('t1')).toBe(true);
    expect(queueIds(c)).toEqual(['t2']);
  });

  it('runs turns strictly one at a time, in arrival order', async () => {
    const c = start({ maxQueued: 5 });
    const ids = ['t1', 't2', 't3', 't4', 't5', 't6'];
    for (const id of ids) c.request(id);
    expect(c.activeId()).toBe('t1');
    expect(queueIds(c)).toEqual(['t2', 't3', 't4', 't5', 't6']);
    for (const id of ids) {
      expect(c.turns.started.at(-1)).toBe(id);
      expect(ids.filter((other) => c.turns.isRunning(other))).toEqual([id]);
      await c.finish(id);
    }
    expect(c.turns.started).toEqual(ids);
    expect(c.turns.maxRunning).toBe(1);
    expect(c.snap().value).toBe('idle');
  });
});

describe('conversation machine: failing turns', () => {
  it('a turn that errors still frees the conversation for the next one', async () => {
    const c = start();
    c.request('t1');
    c.request('t2');
    c.turns.crash('t1');
    await waitFor(c.actor, (s) => s.context.active?.id !== 't1', { timeout: 2_000 });
    expect(c.snap().status).toBe('active');
    expect(c.activeId()).toBe('t2');
    expect(c.snap().context.lastTurn).toBeNull();
    await c.finish('t2');
    expect(c.snap().value).toBe('idle');
  });

  it('a turn that errors as the last one returns to idle and takes new turns', async () => {
    const c = start();
    c.request('t1');
    c.turns.crash('t1', 'not even an Error');
    await waitFor(c.actor, (s) => s.value === 'idle', { timeout: 2_000 });
    c.request('t2');
    expect(c.activeId()).toBe('t2');
  });
});

describe('conversation machine: idle unload (SimulatedClock)', () => {
  it('unloads after idleMs of idleness once the last turn ended, not before', async () => {
    const c = start({ idleMs: 1_000 });
    c.request('t1');
    c.clock.increment(5_000); // a long turn: no idle timer while answering
    expect(c.snap().status).toBe('active');
    await c.finish('t1');
    expect(c.snap().value).toBe('idle');

    c.clock.increment(999);
    expect(c.snap().status).toBe('active');
    expect(c.snap().value).toBe('idle');
    c.clock.increment(1);
    expect(c.snap().status).toBe('done');
    expect(c.snap().value).toBe('unloaded');
  });

  it('a fresh actor with no traffic unloads after idleMs', () => {
    const c = start({ idleMs: 500 });
    c.clock.increment(499);
    expect(c.snap().status).toBe('active');
    c.clock.increment(1);
    expect(c.snap().status).toBe('done');
    expect(c.snap().value).toBe('unloaded');
  });

  it('a request arriving before the deadline resets it', async () => {
    const c = start({ idleMs: 1_000 });
    c.clock.increment(900);
    c.request('t1');
    await c.finish('t1'); // idle again at t=900
    c.clock.increment(200); // t=1100: past the first deadline (1000), not the new one (1900)
    expect(c.snap().status).toBe('active');
    expect(c.snap().value).toBe('idle');
    c.clock.increment(799); // t=1899
    expect(c.snap().status).toBe('active');
    c.clock.increment(1); // t=1900
    expect(c.snap().status).toBe('done');
    expect(c.snap().value).toBe('unloaded');
  });
});

describe('conversation machine: closed', () => {
  it('a conversation created closed refuses turn.requested', () => {
    const c = start({ status: 'closed' });
    expect(c.snap().value).toBe('closed');
    expect(c.snap().can({ type: 'turn.requested', turn: c.handle('t1') })).toBe(false);
    const before = c.snap().context;
    c.request('t1');
    expect(c.snap().context).toEqual(before);
    expect(c.turns.started).toEqual([]);
  });

  it('conversation.close from idle closes it; it then refuses turns', () => {
    const c = start();
    c.send({ type: 'conversation.close' });
    expect(c.snap().value).toBe('closed');
    expect(c.snap().context.status).toBe('closed');
    expect(c.snap().can({ type: 'turn.requested', turn: c.handle('t1') })).toBe(false);
  });

  it('a closed conversation still unloads when idle', () => {
    const c = start({ status: 'closed', idleMs: 300 });
    c.clock.increment(300);
    expect(c.snap().value).toBe('unloaded');
  });
});

describe('conversation machine: cancel', () => {
  /** A conversation whose turns run until cancelled, recording `cancel <turnId>` in `received`. */
  function withCancellableTurns(received: string[]) {
    const turn = setup({ types: { input: {} as TurnInput, events: {} as { type: 'cancel' } } }).createMachine({
      context: ({ input }) => ({ turnId: input.turn.id }),
      initial: 'running',
      states: {
        running: { on: { cancel: { target: 'done', actions: ({ context }) => received.push(`cancel ${context.turnId}`) } } },
        done: { type: 'final' },
      },
      output: ({ context }): TurnOutput => ({ turnId: context.turnId, outcome: 'succeeded', finishReason: 'cancelled' }),
    });
    const logic = conversationMachine.provide({ actors: { turn: turn as unknown as AnyActorLogic } as never });
    return createActor(logic, { input: BASE_INPUT, clock: new SimulatedClock() });
  }

  it('turn.cancel is forwarded to the running turn as cancel', async () => {
    const received: string[] = [];
    const actor = withCancellableTurns(received);
    actor.start();
    actor.send({ type: 'turn.requested', turn: { id: 't1' } });
    actor.send({ type: 'turn.cancel' });
    const snap = await waitFor(actor, (s) => s.value === 'idle', { timeout: 2_000 });
    expect(received).toEqual(['cancel t1']);
    expect(snap.context.lastTurn).toEqual({ turnId: 't1', outcome: 'succeeded', finishReason: 'cancelled' });
  });

  it('turn.cancel naming another turn than the running one is ignored', () => {
    const received: string[] = [];
    const actor = withCancellableTurns(received);
    actor.start();
    actor.send({ type: 'turn.requested', turn: { id: 't1' } });
    actor.send({ type: 'turn.requested', turn: { id: 't2' } });
    actor.send({ type: 'turn.cancel', turnId: 't2' });
    expect(received).toEqual([]);
    expect(actor.getSnapshot().context.active?.id).toBe('t1');
    actor.send({ type: 'turn.cancel', turnId: 't1' });
    expect(received).toEqual(['cancel t1']);
  });
});
