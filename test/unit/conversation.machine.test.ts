import { describe, expect, it } from 'vitest';
import { createActor, fromCallback, SimulatedClock, waitFor, type AnyActorLogic } from 'xstate';
import { conversationMachine } from '../../actors/conversation/conversation.machine.js';
import type { ConversationEvent, ConversationInput } from '../../actors/conversation/conversation.types.js';
import type { TurnCommand, TurnEnded, TurnInput, TurnOutput } from '../../actors/turn/turn.types.js';

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
 * A controllable `turn` stub (a callback actor, like the real one): each started turn waits until the
 * test ends it, then sends `turn.ended` to its conversation. Records the order turns start in, their
 * inputs, the commands they receive, and the highest number running at once.
 */
function turnStub() {
  const running = new Map<string, (output: TurnOutput) => void>();
  const started: string[] = [];
  const inputs: TurnInput[] = [];
  const commands: string[] = [];
  let maxRunning = 0;
  const logic = fromCallback<TurnCommand, TurnInput>(({ input, sendBack, receive }) => {
    if (input.turn.id === 'explodes') throw new Error('turn actor blew up as it started');
    started.push(input.turn.id);
    inputs.push(input);
    receive((cmd) => commands.push(`${cmd.type} ${input.turn.id}`));
    running.set(input.turn.id, (output) => sendBack({ type: 'turn.ended', output } satisfies TurnEnded));
    maxRunning = Math.max(maxRunning, running.size);
    return () => { running.delete(input.turn.id); };
  });
  const end = (turnId: string, output: TurnOutput) => {
    const send = running.get(turnId);
    if (!send) throw new Error(`turn ${turnId} is not running (running: ${[...running.keys()].join(', ')})`);
    send(output);
  };
  return {
    logic,
    started,
    inputs,
    commands,
    get maxRunning() { return maxRunning; },
    isRunning: (turnId: string) => running.has(turnId),
    succeed: (turnId: string) => end(turnId, { turnId, outcome: 'succeeded', finishReason: 'stop' }),
    fail: (turnId: string) => end(turnId, { turnId, outcome: 'failed', error: { type: 'upstream_error', code: 'model_timeout', message: 'slow' } }),
    /** A stale turn.ended naming another turn than the running one. */
    endOther: (runningId: string, otherId: string) => {
      const send = running.get(runningId)!;
      send({ turnId: otherId, outcome: 'succeeded', finishReason: 'stop' });
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

describe('conversation machine: a new conversation\'s first turn (input firstTurn)', () => {
  it('starts answering that turn at once: the turn actor runs with the very object as input, and nothing was idle', async () => {
    const first = { id: 'first' };
    const c = start({ firstTurn: first });
    expect(c.snap().value).toBe('answering');
    expect(c.snap().context.active).toBe(first);
    expect(c.turns.started).toEqual(['first']);
    expect(c.turns.inputs[0]!.turn).toBe(first);
    // No idle timer was left behind: only the one armed after the turn ends unloads the actor.
    c.clock.increment(5_000);
    expect(c.snap().value).toBe('answering');
    await c.finish('first');
    expect(c.snap().value).toBe('idle');
    expect(c.snap().context.lastTurn).toEqual({ turnId: 'first', outcome: 'succeeded', finishReason: 'stop' });
    c.clock.increment(1_000);
    expect(c.snap().status).toBe('done');
  });

  it('queues a request made while the first turn runs, and starts it when the first ends', async () => {
    const c = start({ firstTurn: { id: 'first' } });
    c.request('t2');
    expect(c.snap().context.queue.map((t) => t.id)).toEqual(['t2']);
    await c.finish('first');
    expect(c.activeId()).toBe('t2');
    expect(c.turns.started).toEqual(['first', 't2']);
  });

  it('takes no first turn unless the stored status is active', () => {
    for (const status of ['pending_handoff', 'handed_off', 'closed'] as const) {
      const c = start({ status, firstTurn: { id: 'first' } });
      expect(c.snap().value).toBe(status === 'closed' ? 'closed' : 'idle');
      expect(c.snap().context.active).toBeNull();
      expect(c.turns.started).toEqual([]);
    }
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
  it('a turn that ends failed frees the conversation for the next one, and lastTurn says why', async () => {
    const c = start();
    c.request('t1');
    c.request('t2');
    c.turns.fail('t1');
    expect(c.activeId()).toBe('t2');
    expect(c.snap().context.lastTurn).toMatchObject({ turnId: 't1', outcome: 'failed', error: { code: 'model_timeout' } });
    await c.finish('t2');
    expect(c.snap().value).toBe('idle');
  });

  it('a turn actor that throws as it starts is recorded as failed and the next turn runs', () => {
    const c = start();
    c.request('t0');
    c.request('explodes');
    c.request('t2');
    c.turns.succeed('t0');
    expect(c.snap().context.lastTurn).toEqual({ turnId: 'explodes', outcome: 'failed', error: { type: 'api_error', code: 'internal_error', message: 'The turn could not start.' } });
    expect(c.activeId()).toBe('t2');
  });

  it('ignores a turn.ended that does not name the running turn', () => {
    const c = start();
    c.request('t1');
    c.turns.endOther('t1', 'someone-else');
    expect(c.activeId()).toBe('t1');
    expect(c.snap().context.lastTurn).toBeNull();
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
  it('turn.cancel is forwarded to the running turn as cancel', () => {
    const c = start();
    c.request('t1');
    c.send({ type: 'turn.cancel' });
    expect(c.turns.commands).toEqual(['cancel t1']);
  });

  it('turn.cancel naming another turn than the running one is ignored', () => {
    const c = start();
    c.request('t1');
    c.request('t2');
    c.send({ type: 'turn.cancel', turnId: 't2' });
    expect(c.turns.commands).toEqual([]);
    c.send({ type: 'turn.cancel', turnId: 't1' });
    expect(c.turns.commands).toEqual(['cancel t1']);
  });

  it('nothing is forwarded while idle', () => {
    const c = start();
    c.send({ type: 'turn.cancel' });
    expect(c.turns.commands).toEqual([]);
  });
});

describe('conversation machine: handoff (API.md "Conversations and handoff")', () => {
  const status = (c: ReturnType<typeof start>) => c.snap().context.status;

  it('active -> pending_handoff -> handed_off -> active, each refused when it would change nothing', () => {
    const c = start();
    expect(c.snap().can({ type: 'handoff.resolve' })).toBe(false);
    c.send({ type: 'handoff.request', by: 'api' });
    expect(status(c)).toBe('pending_handoff');
    expect(c.snap().value).toBe('idle');
    expect(c.snap().can({ type: 'handoff.request', by: 'visitor' })).toBe(false);
    c.send({ type: 'handoff.takeover' });
    expect(status(c)).toBe('handed_off');
    expect(c.snap().can({ type: 'handoff.takeover' })).toBe(false);
    c.send({ type: 'handoff.resolve' });
    expect(status(c)).toBe('active');
  });

  it('an operator may take over an active conversation, and resolve a pending one without taking over', () => {
    const c = start();
    c.send({ type: 'handoff.takeover' });
    expect(status(c)).toBe('handed_off');
    c.send({ type: 'handoff.resolve' });
    c.send({ type: 'handoff.request', by: 'visitor' });
    expect(status(c)).toBe('pending_handoff');
    c.send({ type: 'handoff.resolve' });
    expect(status(c)).toBe('active');
  });

  it('takes no turn while pending or handed off (the runtime forwards the message instead)', () => {
    const c = start();
    c.send({ type: 'handoff.request', by: 'api' });
    expect(c.snap().can({ type: 'turn.requested', turn: c.handle('t1') })).toBe(false);
    c.send({ type: 'handoff.takeover' });
    expect(c.snap().can({ type: 'turn.requested', turn: c.handle('t1') })).toBe(false);
    c.request('t1');
    expect(c.turns.started).toEqual([]);
    c.send({ type: 'handoff.resolve' });
    c.request('t2');
    expect(c.turns.started).toEqual(['t2']);
  });

  it('a request while a turn runs stops it with reason handoff and drops the queue; the machine idles when it ends', async () => {
    const c = start({ maxQueued: 3 });
    c.request('t1');
    c.request('t2');
    c.request('t3');
    c.send({ type: 'handoff.request', by: 'visitor' });
    expect(status(c)).toBe('pending_handoff');
    expect(queueIds(c)).toEqual([]);
    expect(c.turns.commands).toEqual(['cancel t1']);
    await c.finish('t1');
    expect(c.snap().value).toBe('idle');
    expect(c.turns.started).toEqual(['t1']);
  });

  it('the cancel carries the reason: client, handoff or closed', () => {
    const reasons: string[] = [];
    const logic = conversationMachine.provide({
      actors: {
        turn: fromCallback<TurnCommand, TurnInput>(({ receive }) => { receive((cmd) => reasons.push(cmd.reason)); }) as unknown as AnyActorLogic,
      } as never,
    });
    const actor = createActor(logic, { input: BASE_INPUT }).start();
    actor.send({ type: 'turn.requested', turn: { id: 't1' } });
    actor.send({ type: 'turn.cancel' });
    actor.send({ type: 'handoff.takeover' });
    actor.send({ type: 'conversation.close' });
    expect(reasons).toEqual(['client', 'handoff', 'closed']);
    actor.stop();
  });

  it("the agent's own handoff tool does not stop its turn, which then ends by itself", async () => {
    const c = start();
    c.request('t1');
    c.request('t2');
    c.send({ type: 'handoff.request', by: 'agent', turnId: 't1' });
    expect(status(c)).toBe('pending_handoff');
    expect(c.turns.commands).toEqual([]);
    expect(queueIds(c)).toEqual([]);
    await c.finish('t1');
    expect(c.snap().value).toBe('idle');
  });

  it('a takeover while pending does not stop the running turn twice', () => {
    const c = start();
    c.request('t1');
    c.send({ type: 'handoff.request', by: 'api' });
    c.send({ type: 'handoff.takeover' });
    expect(status(c)).toBe('handed_off');
    expect(c.turns.commands).toEqual(['cancel t1']);
  });

  it('a conversation rehydrated in handoff stays there', () => {
    expect(start({ status: 'pending_handoff' }).snap().context.status).toBe('pending_handoff');
    const c = start({ status: 'handed_off' });
    expect(c.snap().value).toBe('idle');
    expect(c.snap().can({ type: 'turn.requested', turn: c.handle('t1') })).toBe(false);
  });
});

describe('conversation machine: closing from any status', () => {
  it.each(['active', 'pending_handoff', 'handed_off'] as const)('closes from %s; every later change, another close too, is refused', (from) => {
    const c = start({ status: from });
    c.send({ type: 'conversation.close' });
    expect(c.snap().value).toBe('closed');
    expect(c.snap().context.status).toBe('closed');
    for (const e of [{ type: 'handoff.request', by: 'api' }, { type: 'handoff.takeover' }, { type: 'handoff.resolve' }, { type: 'conversation.close' }] as const) {
      expect(c.snap().can(e)).toBe(false);
    }
  });

  it('a close while a turn runs stops it (reason closed), drops the queue, and the machine is closed once the turn ended', async () => {
    const c = start({ maxQueued: 2 });
    c.request('t1');
    c.request('t2');
    c.send({ type: 'conversation.close' });
    expect(c.snap().value).toBe('answering');
    expect(c.snap().context.status).toBe('closed');
    expect(queueIds(c)).toEqual([]);
    expect(c.turns.commands).toEqual(['cancel t1']);
    expect(c.snap().can({ type: 'turn.requested', turn: c.handle('t3') })).toBe(false);
    c.turns.succeed('t1');
    await waitFor(c.actor, (s) => s.value === 'closed', { timeout: 2_000 });
    expect(c.turns.started).toEqual(['t1']);
  });
});
