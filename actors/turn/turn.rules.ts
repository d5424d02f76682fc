/**
 * Pure rules of a turn (no I/O), used by the runtime's turn runner and tested on their own.
 */
import type { FinishReason, StepOutcome } from './turn.types.js';

/**
 * What follows a generation step: run the tools and call the model again, or finish with a reason.
 * - Tool calls with steps left (`step < maxSteps`): `tools`.
 * - Tool calls on the last allowed step: finish as `length` (the answer was cut by the tool-loop bound).
 * - `tool_calls` with no calls at all is just the end of the answer: `stop`.
 * - Otherwise the model's own reason (`stop`, `length`, `content_filter`).
 */
export function afterGeneration(step: number, maxSteps: number, outcome: StepOutcome): { next: 'tools' } | { next: 'finish'; finishReason: FinishReason } {
  if (outcome.finishReason === 'tool_calls' || outcome.toolCalls > 0) {
    if (outcome.toolCalls === 0) return { next: 'finish', finishReason: 'stop' };
    return step < maxSteps ? { next: 'tools' } : { next: 'finish', finishReason: 'length' };
  }
  return { next: 'finish', finishReason: outcome.finishReason };
}
