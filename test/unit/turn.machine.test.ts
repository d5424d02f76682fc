import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, waitFor } from 'xstate';
import { turnMachine } from '../../actors/turn/turn.machine.js';
import type {
  FailInput, FinishInput, RunToolsInput, StepResult, TurnOutput, TurnStepInput, TurnToolCall,
} from '../../actors/turn/turn.types.js';

/** One recorded call of a provided actor. */
type Call =
  | { actor: 'prepare'; input: TurnStepInput }
  | { actor: 'generate'; input: TurnStepInput }
  | { actor: 'runTools'; input: RunToolsInput }
  | { actor: 'moderate'; input: FinishInput }
  | { actor: 'persist'; input: FinishInput }
  | { actor: 'fail'; input: FailInput };

interface StubBehaviour {
  prepare?: (input: TurnStepInput) => Promise<void>;
  /** Called with the 1-based generate call number (and the abort signal). */
  generate?: (input: TurnStepInput, call: number, signal: AbortSignal) => Promise<StepResult>;
  runTools?: (input: RunToolsInput) => Promise<void>;
  moderate?: (input: FinishInput) => Promise<{ blocked: boolean }>;
  persist?: (input: FinishInput) => Promise<void>;
  fail?: (input: FailInput) => Promise<void>;
}

const stop: StepResult = { finishReason: 'stop', toolCalls: [] };

/** The turn machine with recording stubs for every I/O actor. */
function harness(behaviour: StubBehaviour = {}) {
  const calls: Call[] = [];
  const signals: AbortSignal[] = [];
  let generateCalls = 0;
  const logic = turnMachine.provide({
    actors: {
      prepare: fromPromise<void, TurnStepInput>(async ({ input }) => {
        calls.push({ actor: 'prepare', input });
        await behaviour.prepare?.(input);
      }),
      generate: fromPromise<StepResult, TurnStepInput>(async ({ input, signal }) => {
        calls.push({ actor: 'generate', input });
        signals.push(signal);
        generateCalls += 1;
        return behaviour.generate ? behaviour.generate(input, generateCalls, signal) : stop;
      }),
      runTools: fromPromise<void, RunToolsInput>(async ({ input }) => {
        calls.push({ actor: 'runTools', input });
        await behaviour.runTools?.(input);
      }),
      moderate: fromPromise<{ blocked: boolean }, FinishInput>(async ({ input }) => {
        calls.push({ actor: 'moderate', input });
        return behaviour.moderate ? behaviour.moderate(input) : { blocked: false };
      }),
      persist: fromPromise<void, FinishInput>(async ({ input }) => {
        calls.push({ actor: 'persist', input });
        await behaviour.persist?.(input);
      }),
      fail: fromPromise<void, FailInput>(async ({ input }) => {
        calls.push({ actor: 'fail', input });
        await behaviour.fail?.(input);
      }),
    },
  });
  return { logic, calls, signals, names: () => calls.map((c) => c.actor) };
}

async function runToEnd(logic: ReturnType<typeof harness>['logic'], maxSteps = 5) {
  const actor = createActor(logic, { input: { turnId: 'turn_1', conversationId: 'conv_1', maxSteps } });
  actor.start();
  const snap = await waitFor(actor, (s) => s.status !== 'active', { timeout: 5_000 });
  return { actor, snap, output: snap.output as TurnOutput };
}

const never = <T>(): Promise<T> => new Promise<T>(() => {});

describe('turn machine: happy path', () => {
  it('runs prepare -> generate -> moderate -> persist and succeeds with stop', async () => {
    const h = harness();
    const { snap, output } = await runToEnd(h.logic);
    expect(snap.status).toBe('done');
    expect(snap.value).toBe('succeeded');
    expect(h.names()).toEqual(['prepare', 'generate', 'moderate', 'persist']);
    expect(output).toEqual({ turnId: 'turn_1', outcome: 'succeeded', finishReason: 'stop' });
    expect(h.calls[0]).toEqual({ actor: 'prepare', input: { turnId: 'turn_1', step: 0 } });
    expect(h.calls[1]).toEqual({ actor: 'generate', input: { turnId: 'turn_1', step: 1 } });
    expect(h.calls[2]).toEqual({ actor: 'moderate', input: { turnId: 'turn_1', finishReason: 'stop' } });
    expect(h.calls[3]).toEqual({ actor: 'persist', input: { turnId: 'turn_1', finishReason: 'stop' } });
  });
});

describe('turn machine: tool loop', () => {
  const first: TurnToolCall[] = [{ id: 'call_1', name: 'search_knowledge', arguments: '{"query":"a"}' }];
  const second: TurnToolCall[] = [
    { id: 'call_2', name: 'search_knowledge', arguments: '{"query":"b"}' },
    { id: 'call_3', name: 'handoff', arguments: '{}' },
  ];

  it('runs the tools the model asks for, then generates again until stop', async () => {
    const h = harness({
      generate: async (_input, n) => {
        if (n === 1) return { finishReason: 'tool_calls', toolCalls: first };
        if (n === 2) return { finishReason: 'tool_calls', toolCalls: second };
        return stop;
      },
    });
    const { output } = await runToEnd(h.logic, 5);
    expect(h.names()).toEqual([
      'prepare', 'generate', 'runTools', 'generate', 'runTools', 'generate', 'moderate', 'persist',
    ]);
    const tools = h.calls.filter((c) => c.actor === 'runTools').map((c) => c.input);
    expect(tools).toEqual([{ turnId: 'turn_1', calls: first }, { turnId: 'turn_1', calls: second }]);
    const steps = h.calls.filter((c) => c.actor === 'generate').map((c) => (c.input as TurnStepInput).step);
    expect(steps).toEqual([1, 2, 3]);
    expect(output).toEqual({ turnId: 'turn_1', outcome: 'succeeded', finishReason: 'stop' });
  });

  it('bounds the loop by maxSteps: a model that always wants tools ends as length', async () => {
    const h = harness({ generate: async () => ({ finishReason: 'tool_calls', toolCalls: first }) });
    const { output } = await runToEnd(h.logic, 2);
    expect(h.calls.filter((c) => c.actor === 'generate')).toHaveLength(2);
    expect(h.calls.filter((c) => c.actor === 'runTools')).toHaveLength(1);
    expect(h.names()).toEqual(['prepare', 'generate', 'runTools', 'generate', 'moderate', 'persist']);
    const moderate = h.calls.find((c) => c.actor === 'moderate');
    expect(moderate?.input).toEqual({ turnId: 'turn_1', finishReason: 'length' });
    expect(output).toEqual({ turnId: 'turn_1', outcome: 'succeeded', finishReason: 'length' });
  });

  it('maxSteps 1 allows a single model call and no tools', async () => {
    const h = harness({ generate: async () => ({ finishReason: 'tool_calls', toolCalls: first }) });
    const { output } = await runToEnd(h.logic, 1);
    expect(h.names()).toEqual(['prepare', 'generate', 'moderate', 'persist']);
    expect(output).toEqual({ turnId: 'turn_1', outcome: 'succeeded', finishReason: 'length' });
  });

  it('finish reason tool_calls with no calls is the end of the answer (stop), not a tool step', async () => {
    const h = harness({ generate: async () => ({ finishReason: 'tool_calls', toolCalls: [] }) });
    const { output } = await runToEnd(h.logic);
    expect(h.names()).toEqual(['prepare', 'generate', 'moderate', 'persist']);
    expect(output).toEqual({ turnId: 'turn_1', outcome: 'succeeded', finishReason: 'stop' });
  });
});

describe('turn machine: moderation', () => {
  it('a blocked reply is persisted and ends as content_filter', async () => {
    const h = harness({ moderate: async () => ({ blocked: true }) });
    const { output } = await runToEnd(h.logic);
    expect(h.names()).toEqual(['prepare', 'generate', 'moderate', 'persist']);
    expect(h.calls[3]).toEqual({ actor: 'persist', input: { turnId: 'turn_1', finishReason: 'content_filter' } });
    expect(output).toEqual({ turnId: 'turn_1', outcome: 'succeeded', finishReason: 'content_filter' });
  });

  it('passes a model content_filter finish reason through', async () => {
    const h = harness({ generate: async () => ({ finishReason: 'content_filter', toolCalls: [] }) });
    const { output } = await runToEnd(h.logic);
    expect(output).toEqual({ turnId: 'turn_1', outcome: 'succeeded', finishReason: 'content_filter' });
  });
});

describe('turn machine: failures', () => {
  it('an AppError-like rejection from generate fails the turn with its type/code/message', async () => {
    const appError = Object.assign(new Error('The model did not answer in time.'), {
      type: 'upstream_error', code: 'model_timeout', status: 504,
    });
    const h = harness({ generate: async () => { throw appError; } });
    const { snap, output } = await runToEnd(h.logic);
    const expected = { type: 'upstream_error', code: 'model_timeout', message: 'The model did not answer in time.' };
    expect(snap.status).toBe('done');
    expect(snap.value).toBe('failed');
    expect(h.names()).toEqual(['prepare', 'generate', 'fail']);
    expect(h.calls[2]).toEqual({ actor: 'fail', input: { turnId: 'turn_1', error: expected } });
    expect(output).toEqual({ turnId: 'turn_1', outcome: 'failed', error: expected });
    expect(h.names()).not.toContain('persist');
    expect(h.names()).not.toContain('moderate');
  });

  it('a plain object with type/code/message is also kept', async () => {
    const h = harness({
      generate: () => Promise.reject({ type: 'upstream_error', code: 'model_timeout', message: 'slow' }),
    });
    const { output } = await runToEnd(h.logic);
    expect(output).toEqual({
      turnId: 'turn_1', outcome: 'failed', error: { type: 'upstream_error', code: 'model_timeout', message: 'slow' },
    });
  });

  it.each([
    ['a plain Error', new Error('secret internals')],
    ['a string', 'kaput'],
    ['undefined', undefined],
    ['an object with a non-string code', { type: 'x', code: 42, message: 'm' }],
  ])('an unknown thrown value (%s) becomes internal_error', async (_label, thrown) => {
    const h = harness({ generate: () => Promise.reject(thrown) });
    const { output } = await runToEnd(h.logic);
    const expected = { type: 'api_error', code: 'internal_error', message: 'The turn failed.' };
    expect(output).toEqual({ turnId: 'turn_1', outcome: 'failed', error: expected });
    expect(h.calls.find((c) => c.actor === 'fail')?.input).toEqual({ turnId: 'turn_1', error: expected });
    expect(h.names()).not.toContain('persist');
  });

  it('failures in prepare, runTools, moderate and persist also end in fail -> failed', async () => {
    const boom = { type: 'api_error', code: 'store_unavailable', message: 'down' };
    const cases: Array<[StubBehaviour, string[]]> = [
      [{ prepare: () => Promise.reject(boom) }, ['prepare', 'fail']],
      [{
        generate: async () => ({ finishReason: 'tool_calls', toolCalls: [{ id: 'c', name: 't', arguments: '{}' }] }),
        runTools: () => Promise.reject(boom),
      }, ['prepare', 'generate', 'runTools', 'fail']],
      [{ moderate: () => Promise.reject(boom) }, ['prepare', 'generate', 'moderate', 'fail']],
      [{ persist: () => Promise.reject(boom) }, ['prepare', 'generate', 'moderate', 'persist', 'fail']],
    ];
    for (const [behaviour, order] of cases) {
      const h = harness(behaviour);
      const { output } = await runToEnd(h.logic);
      expect(h.names()).toEqual(order);
      expect(output).toEqual({ turnId: 'turn_1', outcome: 'failed', error: boom });
    }
  });

  it('fail rejecting still ends in failed, calling fail exactly once (no loop)', async () => {
    const h = harness({
      generate: () => Promise.reject({ type: 'upstream_error', code: 'model_timeout', message: 'slow' }),
      fail: () => Promise.reject(new Error('store down too')),
    });
    const { snap, output } = await runToEnd(h.logic);
    expect(snap.status).toBe('done');
    expect(snap.value).toBe('failed');
    expect(h.names()).toEqual(['prepare', 'generate', 'fail']);
    expect(output).toEqual({
      turnId: 'turn_1', outcome: 'failed', error: { type: 'upstream_error', code: 'model_timeout', message: 'slow' },
    });
  });
});

describe('turn machine: cancel', () => {
  it('cancel during a generate that never resolves aborts it and persists as cancelled', async () => {
    const h = harness({ generate: () => never<StepResult>() });
    const actor = createActor(h.logic, { input: { turnId: 'turn_1', conversationId: 'conv_1', maxSteps: 5 } });
    actor.start();
    await waitFor(actor, (s) => s.matches('generating'), { timeout: 5_000 });
    // fromPromise calls its creator synchronously when the invoke starts.
    expect(h.signals).toHaveLength(1);
    expect(h.signals[0]!.aborted).toBe(false);

    actor.send({ type: 'cancel' });
    const snap = await waitFor(actor, (s) => s.status !== 'active', { timeout: 5_000 });

    expect(h.signals[0]!.aborted).toBe(true);
    expect(h.names()).toEqual(['prepare', 'generate', 'moderate', 'persist']);
    expect(h.calls[2]).toEqual({ actor: 'moderate', input: { turnId: 'turn_1', finishReason: 'cancelled' } });
    expect(h.calls[3]).toEqual({ actor: 'persist', input: { turnId: 'turn_1', finishReason: 'cancelled' } });
    expect(snap.output).toEqual({ turnId: 'turn_1', outcome: 'succeeded', finishReason: 'cancelled' });
  });

  it('cancel while tools run also ends the turn as cancelled without another model call', async () => {
    const h = harness({
      generate: async () => ({ finishReason: 'tool_calls', toolCalls: [{ id: 'c', name: 't', arguments: '{}' }] }),
      runTools: () => never<void>(),
    });
    const actor = createActor(h.logic, { input: { turnId: 'turn_1', conversationId: 'conv_1', maxSteps: 5 } });
    actor.start();
    await waitFor(actor, (s) => s.matches('runningTools'), { timeout: 5_000 });
    actor.send({ type: 'cancel' });
    const snap = await waitFor(actor, (s) => s.status !== 'active', { timeout: 5_000 });
    expect(h.names()).toEqual(['prepare', 'generate', 'runTools', 'moderate', 'persist']);
    expect(snap.output).toEqual({ turnId: 'turn_1', outcome: 'succeeded', finishReason: 'cancelled' });
  });

  it('cancel after the model finished (while moderating) does not change the outcome', async () => {
    let release!: (v: { blocked: boolean }) => void;
    const h = harness({ moderate: () => new Promise((r) => { release = r; }) });
    const actor = createActor(h.logic, { input: { turnId: 'turn_1', conversationId: 'conv_1', maxSteps: 5 } });
    actor.start();
    await waitFor(actor, (s) => s.matches('moderating'), { timeout: 5_000 });
    expect(h.names()).toContain('moderate');
    actor.send({ type: 'cancel' });
    release({ blocked: false });
    const snap = await waitFor(actor, (s) => s.status !== 'active', { timeout: 5_000 });
    expect(snap.output).toEqual({ turnId: 'turn_1', outcome: 'succeeded', finishReason: 'stop' });
  });
});
