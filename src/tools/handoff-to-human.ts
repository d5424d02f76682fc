import { z } from 'zod';
import type { ModelToolSpec } from '../models/port.js';

/** Name of the tool an agent calls to hand the conversation to a person (API.md "Conversations and handoff"). */
export const HANDOFF_TO_HUMAN = 'handoff_to_human';

/** The tool as offered to models (OpenAI function-tool JSON Schema). */
export const handoffToHumanSpec: ModelToolSpec = {
  name: HANDOFF_TO_HUMAN,
  description:
    'Hand this conversation over to a human operator. Call it when the visitor asks for a person, or when you cannot help. ' +
    'After the call you will not answer again until an operator hands the conversation back.',
  parameters: {
    type: 'object',
    properties: { reason: { type: 'string', description: 'Why a person is needed, in one short sentence.' } },
    additionalProperties: false,
  },
};

const Args = z.object({ reason: z.string().max(500).optional() }).strip();

/**
 * The `reason` of a `handoff_to_human` call from the model's raw JSON arguments: the reason when it is a
 * string of at most 500 characters, else undefined (bad arguments never stop a handoff: the visitor asked).
 */
export function handoffReason(rawArgs: string): string | undefined {
  let parsed: unknown;
  try { parsed = JSON.parse(rawArgs || '{}'); } catch { return undefined; }
  const args = Args.safeParse(parsed);
  return args.success ? args.data.reason : undefined;
}
