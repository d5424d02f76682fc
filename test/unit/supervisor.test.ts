import { afterEach, describe, expect, it, vi } from 'vitest';
import { assign, fromCallback, SimulatedClock, waitFor, type AnyActorLogic } from 'xstate';
import { conversationMachine } from '../../actors/conversation/conversation.machine.js';
import type { TurnCommand, TurnInput } from '../../actors/turn/turn.types.js';
import type { Logger } from '../../src/log/logger.js';
import { Supervisor, type ConversationLogic, type SupervisorOptions } from '../../src/runtime/supervisor.js';

/** A turn that succeeds at once (on the next microtask). */
const quickTurn = fromCallback<TurnCommand, TurnInput>(({ input, sendBack }) => {
  queueMicrotask(() => sendBack({ type: 'turn.ended', output: { turnId: input.turn.id, outcome: 'succeeded', finishReason: 'stop' } }));
});

/** The real conversation machine with the stub turn. */
const workingLogic = conversationMachine.provide({
  actors: { turn: quickTurn as unknown as AnyActorLogic } as never,
}) as unknown as ConversationLogic;

/** Same, but `turn.requested` for the turn id `poison` throws inside the action that takes it (crashes the actor). */
const poisonableLogic = conversationMachine.provide({
  actors: { turn: quickTurn as unknown as AnyActorLogic } as never,
  actions: {
    start: assign({
      active: ({ event }) => {
        const turn = (event as { turn: { id: string } }).turn;
        if (turn.id === 'poison') throw new Error('boom');
        return turn;
      },
    }),
  },
}) as unknown as ConversationLogic;

interface LogLine { level: 'error' | 'warn' | 'info' | 'debug'; obj: Record<string, unknown>; msg: string | undefined }

function stubLogger() {
  const lines: LogLine[] = [];
  const at = (level: LogLine['level']) => (obj: Record<string, unknown>, msg?: string) => { lines.push({ level, obj, msg }); };
  const logger = { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') } as unknown as Logger;
  return { logger, lines };
}

const IDLE_MS = 10_000;

function makeSupervisor(extra: Partial<SupervisorOptions> = {}) {
  const clock = new SimulatedClock();
  const log = stubLogger();
  const crashes: Array<{ id: string; err: unknown }> = [];
  const supervisor = new Supervisor({
    logic: workingLogic, logger: log.logger, maxQueued: 2, idleMs: IDLE_MS, maxSteps: 4, clock,
    onCrash: (id, err) => crashes.push({ id, err }),
    baseBackoffMs: 1, maxBackoffMs: 4,
    ...extra,
  });
  return { supervisor, clock, log, crashes };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('Supervisor: registry', () => {
  it('acquire twice returns the same live actor', async () => {
    const { supervisor } = makeSupervisor();
    const a = await supervisor.acquire({ id: 'conv_1', status: 'active' });
    const b = await supervisor.acquire({ id: 'conv_1', status: 'active' });
    expect(b).toBe(a);
    expect(supervisor.size).toBe(1);
    expect(supervisor.peek('conv_1')).toBe(a);
    expect(a.getSnapshot().context).toMatchObject({ conversationId: 'conv_1', status: 'active', maxQueued: 2, idleMs: IDLE_MS, maxSteps: 4 });
    supervisor.stopAll();
  });

  it('keeps one actor per conversation', async () => {
    const { supervisor } = makeSupervisor();
    const a = await supervisor.acquire({ id: 'conv_1', status: 'active' });
    const b = await supervisor.acquire({ id: 'conv_2', status: 'active' });
    expect(b).not.toBe(a);
    expect(supervisor.size).toBe(2);
    expect(supervisor.peek('conv_3')).toBeUndefined();
    supervisor.stopAll();
    expect(supervisor.size).toBe(0);
    expect(a.getSnapshot().status).toBe('stopped');
  });

  it('runs turns through the acquired actor', async () => {
    const { supervisor } = makeSupervisor();
    const actor = await supervisor.acquire({ id: 'conv_1', status: 'active' });
    actor.send({ type: 'turn.requested', turn: { id: 't1' } });
    const snap = await waitFor(actor, (s) => s.context.lastTurn !== null, { timeout: 2_000 });
    expect(snap.context.lastTurn).toEqual({ turnId: 't1', outcome: 'succeeded', finishReason: 'stop' });
    supervisor.stopAll();
  });
});

describe('Supervisor: startNew (a new conversation with its first turn)', () => {
  it('registers an actor already answering the turn, which acquire then returns; it unloads idleMs after the turn', async () => {
    const { supervisor, clock } = makeSupervisor();
    const turn = { id: 't1' };
    const actor = supervisor.startNew({ id: 'conv_new', status: 'active' }, turn);
    expect(actor.getSnapshot().value).toBe('answering');
    expect(actor.getSnapshot().context.active).toBe(turn);
    expect(await supervisor.acquire({ id: 'conv_new', status: 'active' })).toBe(actor);
    const snap = await waitFor(actor, (s) => s.context.lastTurn !== null, { timeout: 2_000 });
    expect(snap.context.lastTurn).toEqual({ turnId: 't1', outcome: 'succeeded', finishReason: 'stop' });
    clock.increment(IDLE_MS);
    expect(supervisor.peek('conv_new')).toBeUndefined();
  });

  it('refuses a conversation that already has a live actor, and leaves that actor alone', async () => {
    const { supervisor } = makeSupervisor();
    const live = await supervisor.acquire({ id: 'conv_1', status: 'active' });
    expect(() => supervisor.startNew({ id: 'conv_1', status: 'active' }, { id: 't1' })).toThrow(/already has a live actor/);
    expect(supervisor.peek('conv_1')).toBe(live);
    expect(live.getSnapshot().value).toBe('idle');
    supervisor.stopAll();
  });
});

describe('Supervisor: idle unload and rehydration', () => {
  it('drops an actor that unloaded itself and rehydrates a new one from the seed', async () => {
    const { supervisor, clock, log } = makeSupervisor();
    const first = await supervisor.acquire({ id: 'conv_1', status: 'active' });
    clock.increment(IDLE_MS - 1);
    expect(supervisor.peek('conv_1')).toBe(first);
    expect(supervisor.size).toBe(1);

    clock.increment(1);
    expect(first.getSnapshot().status).toBe('done');
    expect(first.getSnapshot().value).toBe('unloaded');
    expect(supervisor.peek('conv_1')).toBeUndefined();
    expect(supervisor.size).toBe(0);
    expect(log.lines).toContainEqual({ level: 'debug', obj: { conversation_id: 'conv_1' }, msg: 'conversation unloaded' });

    // The stored status changed meanwhile (closed elsewhere): the new actor takes it from the seed.
    const second = await supervisor.acquire({ id: 'conv_1', status: 'closed' });
    expect(second).not.toBe(first);
    expect(supervisor.size).toBe(1);
    expect(supervisor.peek('conv_1')).toBe(second);
    expect(second.getSnapshot().status).toBe('active');
    expect(second.getSnapshot().context.status).toBe('closed');
    expect(second.getSnapshot().value).toBe('closed');
    expect(second.getSnapshot().can({ type: 'turn.requested', turn: { id: 't1' } })).toBe(false);
    supervisor.stopAll();
  });

  it('an actor used after its turn unloads idleMs after the turn ended', async () => {
    const { supervisor, clock } = makeSupervisor();
    const actor = await supervisor.acquire({ id: 'conv_1', status: 'active' });
    clock.increment(IDLE_MS - 100);
    actor.send({ type: 'turn.requested', turn: { id: 't1' } });
    await waitFor(actor, (s) => s.value === 'idle' && s.context.lastTurn !== null, { timeout: 2_000 });
    clock.increment(100);
    expect(supervisor.peek('conv_1')).toBe(actor);
    clock.increment(IDLE_MS - 100);
    expect(supervisor.peek('conv_1')).toBeUndefined();
    expect(supervisor.size).toBe(0);
  });
});

describe('Supervisor: crashes', () => {
  it('drops a crashed actor, logs it, calls onCrash, and the next acquire returns a fresh working actor', async () => {
    const { supervisor, log, crashes } = makeSupervisor({ logic: poisonableLogic, baseBackoffMs: 5, maxBackoffMs: 50 });
    const seed = { id: 'conv_1', status: 'active' as const };
    const first = await supervisor.acquire(seed);
    first.send({ type: 'turn.requested', turn: { id: 'poison' } });

    expect(first.getSnapshot().status).toBe('error');
    expect(supervisor.peek('conv_1')).toBeUndefined();
    expect(supervisor.size).toBe(0);
    expect(crashes).toHaveLength(1);
    expect(crashes[0]!.id).toBe('conv_1');
    expect((crashes[0]!.err as Error).message).toBe('boom');
    const errors = log.lines.filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]!.msg).toBe('conversation actor crashed');
    expect(errors[0]!.obj).toMatchObject({ conversation_id: 'conv_1', crash_count: 1, restart_in_ms: 5 });
    expect((errors[0]!.obj.err as Error).message).toBe('boom');

    const second = await supervisor.acquire(seed);
    expect(second).not.toBe(first);
    expect(second.getSnapshot().status).toBe('active');
    // The event that crashed it is not replayed: the new actor starts empty and idle.
    expect(second.getSnapshot().value).toBe('idle');
    expect(second.getSnapshot().context.queue).toEqual([]);
    second.send({ type: 'turn.requested', turn: { id: 't1' } });
    const snap = await waitFor(second, (s) => s.context.lastTurn !== null, { timeout: 2_000 });
    expect(snap.context.lastTurn).toEqual({ turnId: 't1', outcome: 'succeeded', finishReason: 'stop' });
    expect(supervisor.peek('conv_1')).toBe(second);
    expect(crashes).toHaveLength(1);
    supervisor.stopAll();
  });

  it('a crash of one conversation leaves the others alone', async () => {
    const { supervisor, crashes } = makeSupervisor({ logic: poisonableLogic });
    const a = await supervisor.acquire({ id: 'conv_a', status: 'active' });
    const b = await supervisor.acquire({ id: 'conv_b', status: 'active' });
    a.send({ type: 'turn.requested', turn: { id: 'poison' } });
    expect(crashes.map((c) => c.id)).toEqual(['conv_a']);
    expect(supervisor.peek('conv_b')).toBe(b);
    expect(b.getSnapshot().status).toBe('active');
    expect(supervisor.size).toBe(1);
    // No backoff for a conversation that never crashed.
    expect(await supervisor.acquire({ id: 'conv_b', status: 'active' })).toBe(b);
    supervisor.stopAll();
  });

  it('repeated crashes back off with doubling delay capped at maxBackoffMs', async () => {
    const { supervisor, log, crashes } = makeSupervisor({ logic: poisonableLogic, baseBackoffMs: 1, maxBackoffMs: 8 });
    const seed = { id: 'conv_1', status: 'active' as const };
    const seen = new Set<unknown>();
    for (let i = 0; i < 6; i++) {
      const actor = await supervisor.acquire(seed);
      expect(seen.has(actor)).toBe(false);
      seen.add(actor);
      expect(actor.getSnapshot().status).toBe('active');
      actor.send({ type: 'turn.requested', turn: { id: 'poison' } });
      expect(supervisor.peek('conv_1')).toBeUndefined();
    }
    const errors = log.lines.filter((l) => l.level === 'error').map((l) => l.obj);
    expect(errors.map((o) => o.crash_count)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(errors.map((o) => o.restart_in_ms)).toEqual([1, 2, 4, 8, 8, 8]);
    expect(crashes).toHaveLength(6);
    const last = await supervisor.acquire(seed);
    expect(last.getSnapshot().status).toBe('active');
    supervisor.stopAll();
  });

  it('an actor that ran until idle unload clears the crash history: the next crash backs off from the base again', async () => {
    const { supervisor, log, clock } = makeSupervisor({ logic: poisonableLogic, baseBackoffMs: 1, maxBackoffMs: 8 });
    const seed = { id: 'conv_1', status: 'active' as const };
    for (let i = 0; i < 3; i++) (await supervisor.acquire(seed)).send({ type: 'turn.requested', turn: { id: 'poison' } });
    await supervisor.acquire(seed);
    clock.increment(IDLE_MS);
    expect(supervisor.peek('conv_1')).toBeUndefined();
    (await supervisor.acquire(seed)).send({ type: 'turn.requested', turn: { id: 'poison' } });
    const errors = log.lines.filter((l) => l.level === 'error').map((l) => l.obj);
    expect(errors.map((o) => [o.crash_count, o.restart_in_ms])).toEqual([[1, 1], [2, 2], [3, 4], [1, 1]]);
    supervisor.stopAll();
  });

  it('acquire after a crash waits for the backoff (fake timers), and concurrent acquires share one actor', async () => {
    // The supervisor's backoff uses Date.now/setTimeout, not the XState clock: drive it with fake timers.
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] });
    const { supervisor } = makeSupervisor({ logic: poisonableLogic, baseBackoffMs: 100, maxBackoffMs: 1_000 });
    const seed = { id: 'conv_1', status: 'active' as const };
    const first = await supervisor.acquire(seed);
    first.send({ type: 'turn.requested', turn: { id: 'poison' } });

    let resolved = 0;
    const p1 = Promise.resolve(supervisor.acquire(seed)).then((a) => { resolved++; return a; });
    const p2 = Promise.resolve(supervisor.acquire(seed)).then((a) => { resolved++; return a; });
    await vi.advanceTimersByTimeAsync(99);
    expect(resolved).toBe(0);
    expect(supervisor.size).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    const [a1, a2] = await Promise.all([p1, p2]);
    expect(resolved).toBe(2);
    expect(a1).toBe(a2);
    expect(a1).not.toBe(first);
    expect(supervisor.size).toBe(1);

    // Second crash: the wait doubles.
    a1.send({ type: 'turn.requested', turn: { id: 'poison' } });
    let again = false;
    const p3 = Promise.resolve(supervisor.acquire(seed)).then((a) => { again = true; return a; });
    await vi.advanceTimersByTimeAsync(199);
    expect(again).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const a3 = await p3;
    expect(again).toBe(true);
    expect(a3.getSnapshot().status).toBe('active');
    supervisor.stopAll();
  });
});

describe('Supervisor: bounded crash records', () => {
  it('keeps at most maxCrashRecords, dropping the oldest', async () => {
    const { supervisor } = makeSupervisor({ logic: poisonableLogic, maxCrashRecords: 3 });
    for (const id of ['c1', 'c2', 'c3', 'c4', 'c5']) {
      (await supervisor.acquire({ id, status: 'active' })).send({ type: 'turn.requested', turn: { id: 'poison' } });
    }
    expect(supervisor.crashRecords).toBe(3);
    // c1 was forgotten: no backoff wait, a fresh actor at once.
    const fresh = await supervisor.acquire({ id: 'c1', status: 'active' });
    expect(fresh.getSnapshot().status).toBe('active');
    supervisor.stopAll();
  });

  it('forgets a crash record crashMemoryMs after its restart time', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] });
    const { supervisor } = makeSupervisor({ logic: poisonableLogic, baseBackoffMs: 10, maxBackoffMs: 10, crashMemoryMs: 1_000 });
    (await supervisor.acquire({ id: 'old', status: 'active' })).send({ type: 'turn.requested', turn: { id: 'poison' } });
    expect(supervisor.crashRecords).toBe(1);
    await vi.advanceTimersByTimeAsync(1_011);
    (await supervisor.acquire({ id: 'new', status: 'active' })).send({ type: 'turn.requested', turn: { id: 'poison' } });
    expect(supervisor.crashRecords).toBe(1);
    supervisor.stopAll();
  });
});

describe('Supervisor: actor systems shared by several conversations', () => {
  /** The actor system an actor belongs to (public on every XState actor). */
  const systemOf = (a: { system: unknown }) => a.system;

  it('creates actors round robin under `systems` roots: the (systems+1)th shares the first one\'s system, the others do not', async () => {
    const { supervisor } = makeSupervisor({ systems: 3 });
    const actors = [];
    for (const id of ['c1', 'c2', 'c3', 'c4']) actors.push(await supervisor.acquire({ id, status: 'active' }));
    expect(supervisor.systemCount).toBe(3);
    expect(systemOf(actors[3]!)).toBe(systemOf(actors[0]!));
    expect(new Set(actors.slice(0, 3).map(systemOf)).size).toBe(3);
    supervisor.stopAll();
  });

  it('spreads actors over 256 systems by default', async () => {
    const { supervisor } = makeSupervisor();
    const first = await supervisor.acquire({ id: 'c0', status: 'active' });
    let last = first;
    for (let i = 1; i <= 256; i++) last = await supervisor.acquire({ id: `c${i}`, status: 'active' });
    expect(supervisor.systemCount).toBe(256);
    expect(systemOf(last)).toBe(systemOf(first));
    expect(systemOf(supervisor.peek('c255')!)).not.toBe(systemOf(first));
    supervisor.stopAll();
  });

  it('creates a root only when one is first needed', async () => {
    const { supervisor } = makeSupervisor({ systems: 8 });
    expect(supervisor.systemCount).toBe(0);
    await supervisor.acquire({ id: 'c1', status: 'active' });
    await supervisor.acquire({ id: 'c2', status: 'active' });
    expect(supervisor.systemCount).toBe(2);
    supervisor.stopAll();
  });

  it('evict stops only that actor; another actor of the same system still answers and unloads on its own timer', async () => {
    const { supervisor, clock } = makeSupervisor({ systems: 1 });
    const a = await supervisor.acquire({ id: 'c1', status: 'active' });
    const b = await supervisor.acquire({ id: 'c2', status: 'active' });
    expect(systemOf(b)).toBe(systemOf(a));
    supervisor.evict('c1');
    expect(a.getSnapshot().status).toBe('stopped');
    expect(supervisor.peek('c1')).toBeUndefined();
    b.send({ type: 'turn.requested', turn: { id: 't1' } as never });
    await waitFor(b, (s) => s.matches('idle'));
    expect(b.getSnapshot().context.lastTurn).toMatchObject({ turnId: 't1', outcome: 'succeeded' });
    clock.increment(IDLE_MS);
    expect(b.getSnapshot().status).toBe('done');
    expect(supervisor.peek('c2')).toBeUndefined();
  });

  it('an actor whose idle timer was cancelled by the stop of a neighbour still unloads (the stop cancels only the stopped actor\'s timers)', async () => {
    const { supervisor, clock } = makeSupervisor({ systems: 1 });
    const a = await supervisor.acquire({ id: 'c1', status: 'active' });
    const b = await supervisor.acquire({ id: 'c2', status: 'active' });
    supervisor.evict('c1');
    expect(a.getSnapshot().status).toBe('stopped');
    clock.increment(IDLE_MS - 1);
    expect(b.getSnapshot().status).toBe('active');
    clock.increment(1);
    expect(b.getSnapshot().status).toBe('done');
  });

  it('stopAll stops every actor of every system', async () => {
    const { supervisor } = makeSupervisor({ systems: 2 });
    const actors = [];
    for (const id of ['c1', 'c2', 'c3']) actors.push(await supervisor.acquire({ id, status: 'active' }));
    supervisor.stopAll();
    expect(actors.map((a) => a.getSnapshot().status)).toEqual(['stopped', 'stopped', 'stopped']);
    expect(supervisor.size).toBe(0);
  });

  it('a crash in one actor leaves the other actors of its system working', async () => {
    const { supervisor, crashes } = makeSupervisor({ logic: poisonableLogic, systems: 1 });
    const bad = await supervisor.acquire({ id: 'bad', status: 'active' });
    const good = await supervisor.acquire({ id: 'good', status: 'active' });
    bad.send({ type: 'turn.requested', turn: { id: 'poison' } as never });
    expect(crashes.map((c) => c.id)).toEqual(['bad']);
    good.send({ type: 'turn.requested', turn: { id: 't1' } as never });
    await waitFor(good, (s) => s.matches('idle'));
    expect(good.getSnapshot().context.lastTurn).toMatchObject({ turnId: 't1', outcome: 'succeeded' });
    // A new actor created under the same root works too.
    const next = await supervisor.acquire({ id: 'next', status: 'active' });
    expect(systemOf(next)).toBe(systemOf(good));
    expect(next.getSnapshot().status).toBe('active');
    supervisor.stopAll();
  });

  it('refuses a systems count that is not a positive integer', () => {
    expect(() => makeSupervisor({ systems: 0 })).toThrow(RangeError);
    expect(() => makeSupervisor({ systems: 1.5 })).toThrow(/positive integer/);
  });
});
