import { describe, expect, it } from 'vitest';
import { createActor, fromCallback, waitFor } from 'xstate';
import { turnMachine, type TurnRunCommand } from '../../actors/turn/turn.machine.js';
import { afterGeneration } from '../../actors/turn/turn.rules.js';
import type { TurnEvent, TurnOutput, TurnRunInput } from '../../actors/turn/turn.types.js';

/**
 * The turn machine with a scripted `run` callback: the test drives the lifecycle events by hand
 * (`report`) and sees what the machine sends to the callback (`commands`).
 */
function harness(opts: { throwOnStart?: boolean } = {}) {
  const commands: TurnRunCommand[] = [];
  const inputs: TurnRunInput[] = [];
  let report: ((e: TurnEvent) => void) | undefined;
  let stopped = 0;
  const logic = turnMachine.provide({
    actors: {
      run: fromCallback<TurnRunCommand, TurnRunInput>(({ input, sendBack, receive }) => {
        if (opts.throwOnStart) throw new Error('runner broke');
        inputs.push(input);
        report = sendBack as (e: TurnEvent) => void;
        receive((cmd) => commands.push(cmd));
        return () => { stopped += 1; };
      }),
    },
  });
  const turn = { id: 'turn_1' };
  const actor = createActor(logic, { input: { turn, maxSteps: 3 } });
  actor.start();
  return {
    actor, turn, commands, inputs,
    get stopped() { return stopped; },
    report: (e: TurnEvent) => report!(e),
    value: () => actor.getSnapshot().value,
  };
}

describe('turn machine: lifecycle', () => {
  it('hands the turn object itself and the step bound to the run callback', () => {
    const h = harness();
    expect(h.inputs).toHaveLength(1);
    expect(h.inputs[0]!.turn).toBe(h.turn);
    expect(h.inputs[0]!.maxSteps).toBe(3);
    expect(h.value()).toEqual({ running: 'preparing' });
  });

  it('follows preparing -> generating <-> runningTools -> finishing -> succeeded, counting steps', async () => {
    const h = harness();
    h.report({ type: 'turn.generating', step: 1 });
    expect(h.value()).toEqual({ running: 'generating' });
    expect(h.actor.getSnapshot().context.step).toBe(1);
    h.report({ type: 'turn.tools', count: 2 });
    expect(h.value()).toEqual({ running: 'runningTools' });
    h.report({ type: 'turn.generating', step: 2 });
    expect(h.value()).toEqual({ running: 'generating' });
    expect(h.actor.getSnapshot().context.step).toBe(2);
    h.report({ type: 'turn.finishing' });
    expect(h.value()).toEqual({ running: 'finishing' });
    h.report({ type: 'turn.succeeded', finishReason: 'length' });
    const snap = await waitFor(h.actor, (s) => s.status === 'done');
    expect(snap.value).toBe('succeeded');
    expect(snap.output).toEqual({ turnId: 'turn_1', outcome: 'succeeded', finishReason: 'length' } satisfies TurnOutput);
    expect(h.stopped).toBe(1);
  });

  it('ignores a lifecycle event that does not fit the phase', () => {
    const h = harness();
    h.report({ type: 'turn.tools', count: 1 });
    expect(h.value()).toEqual({ running: 'preparing' });
    h.report({ type: 'turn.generating', step: 1 });
    h.report({ type: 'turn.generating', step: 7 });
    expect(h.actor.getSnapshot().context.step).toBe(1);
  });

  it('a cancel before the model call goes straight to finishing', () => {
    const h = harness();
    h.actor.send({ type: 'cancel' });
    expect(h.commands).toEqual([{ type: 'cancel' }]);
    h.report({ type: 'turn.finishing' });
    expect(h.value()).toEqual({ running: 'finishing' });
  });

  it('forwards cancel to the run callback in any running phase', () => {
    const h = harness();
    h.report({ type: 'turn.generating', step: 1 });
    h.actor.send({ type: 'cancel' });
    h.report({ type: 'turn.tools', count: 1 });
    h.actor.send({ type: 'cancel' });
    expect(h.commands).toEqual([{ type: 'cancel' }, { type: 'cancel' }]);
  });

  it('turn.failed ends it as failed with the error, from any phase', async () => {
    const h = harness();
    h.report({ type: 'turn.generating', step: 1 });
    const error = { type: 'upstream_error', code: 'model_timeout', message: 'slow' };
    h.report({ type: 'turn.failed', error });
    const snap = await waitFor(h.actor, (s) => s.status === 'done');
    expect(snap.value).toBe('failed');
    expect(snap.output).toEqual({ turnId: 'turn_1', outcome: 'failed', error });
  });

  it('a run callback that throws when started fails the turn instead of crashing its parent', async () => {
    const h = harness({ throwOnStart: true });
    const snap = await waitFor(h.actor, (s) => s.status === 'done');
    expect(snap.value).toBe('failed');
    expect(snap.output).toMatchObject({ outcome: 'failed', error: { code: 'internal_error' } });
  });
});

describe('turn rules: after a generation step', () => {
  it('runs tools while steps are left', () => {
    expect(afterGeneration(1, 3, { finishReason: 'tool_calls', toolCalls: 2 })).toEqual({ next: 'tools' });
    expect(afterGeneration(2, 3, { finishReason: 'tool_calls', toolCalls: 1 })).toEqual({ next: 'tools' });
  });

  it('tool calls on the last allowed step end the turn as length', () => {
    expect(afterGeneration(3, 3, { finishReason: 'tool_calls', toolCalls: 1 })).toEqual({ next: 'finish', finishReason: 'length' });
  });

  it('tool calls reported with another finish reason still run the tools', () => {
    expect(afterGeneration(1, 3, { finishReason: 'stop', toolCalls: 1 })).toEqual({ next: 'tools' });
  });

  it('tool_calls with no call at all is the end of the answer', () => {
    expect(afterGeneration(1, 3, { finishReason: 'tool_calls', toolCalls: 0 })).toEqual({ next: 'finish', finishReason: 'stop' });
  });

  it('otherwise keeps the model reason', () => {
    expect(afterGeneration(1, 3, { finishReason: 'stop', toolCalls: 0 })).toEqual({ next: 'finish', finishReason: 'stop' });
    expect(afterGeneration(1, 3, { finishReason: 'length', toolCalls: 0 })).toEqual({ next: 'finish', finishReason: 'length' });
    expect(afterGeneration(3, 3, { finishReason: 'content_filter', toolCalls: 0 })).toEqual({ next: 'finish', finishReason: 'content_filter' });
  });
});
