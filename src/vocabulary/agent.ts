/** Agent vocabulary (API.md "Agents"): defined once, zod first. */
import { z } from 'zod';

/**
 * Settings of the safety check that runs on an agent's finished reply (src/moderation/safety-check.ts).
 * `blocked_phrases`: phrases that block the whole reply (matched case-insensitively, as whole words, on
 * NFKC text); `redact_pii`: replace e-mail addresses, Luhn-valid card numbers and API-key-like secrets
 * with placeholders; `blocked_message`: the whole reply when a blocked phrase fires.
 */
export const SafetySettingsSchema = z.object({
  blocked_phrases: z.array(z.string().min(1).max(200)).max(200).default([]),
  redact_pii: z.boolean().default(true),
  blocked_message: z.string().min(1).max(2000).default("I'm sorry, I can't help with that."),
}).strict().meta({ id: 'SafetySettings' });
export type SafetySettings = z.output<typeof SafetySettingsSchema>;

/** An agent's model: a provider configured on the server (`builtin`, `openai`) and its model name. */
export const ModelChoiceSchema = z.object({
  provider: z.string().min(1).max(64),
  name: z.string().min(1).max(200),
}).strict().meta({ id: 'ModelChoice' });
export type ModelChoice = z.infer<typeof ModelChoiceSchema>;
