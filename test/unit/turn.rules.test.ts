import { describe, expect, it } from 'vitest';
import { afterGeneration } from '../../actors/turn/turn.rules.js';

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
