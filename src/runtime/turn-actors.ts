import { fromPromise } from 'xstate';
import type {
  FailInput, FinishInput, RunToolsInput, StepResult, TurnStepInput, TurnToolCall,
} from '../../actors/turn/turn.types.js';
import { newId } from '../ids/ids.js';
import type { Logger } from '../log/logger.js';
import { checkSafety } from '../moderation/safety-check.js';
import type { ModelMessage, ModelToolSpec } from '../models/port.js';
import type { ModelRegistry } from '../models/registry.js';
import type { TokenCounter } from '../models/token-counter.js';
import type { MessageRecord, Store, Usage } from '../store/ports.js';
import { runSearchKnowledge, SEARCH_KNOWLEDGE, searchKnowledgeSpec } from '../tools/search-knowledge.js';
import { toCitations } from './citations.js';
import type { EventBus } from './event-bus.js';
import type { TurnSession, TurnSessions } from './turn-sessions.js';

/** Dependencies of the turn's I/O steps. */
export interface TurnActorDeps {
  store: Store;
  models: ModelRegistry;
  sessions: TurnSessions;
  bus: EventBus;
  logger: Logger;
  /** Counts usage when the provider does not report it. */
  tokens: TokenCounter;
  /** Passages retrieved before generation. */
  retrievalK: number;
  /** Stored messages handed to the model as history. */
  historyLimit: number;
  /**
   * Observes a turn's first token, for metrics (all ms): `setupMs` from acceptance to the model call
   * (store, history, retrieval), `firstTokenMs` from acceptance to the first token written to the
   * channel, `relayMs` from the upstream bytes' arrival to that write (undefined when the provider does
   * not stamp arrival times).
   */
  /** Observes each finished turn: `succeeded` (done) or `failed` (error event). */
  onTurnEnd?: (session: TurnSession, outcome: 'succeeded' | 'failed') => void;
  onFirstToken?: (session: TurnSession, timings: { setupMs: number; firstTokenMs: number; relayMs: number | undefined }) => void;
}

const TOOL_SPECS: Record<string, ModelToolSpec> = { [SEARCH_KNOWLEDGE]: searchKnowledgeSpec };

function parseArguments(raw: string): unknown {
  try { return JSON.parse(raw); } catch { return raw; }
}

function usageOf(s: TurnSession): Usage {
  return { input_tokens: s.inputTokens, output_tokens: s.outputTokens, total_tokens: s.inputTokens + s.outputTokens };
}

/** Any combined abort: the step's own signal (actor stopped, e.g. cancel) or the session's (shutdown). */
function anySignal(a: AbortSignal, b: AbortSignal): AbortSignal {
  return AbortSignal.any([a, b]);
}

/**
 * The I/O steps of the turn machine (actors/turn/turn.machine.ts), provided with
 * `turnMachine.provide({ actors: createTurnActors(deps) })`. Each step finds its turn's data in the
 * session registry by `turnId`, writes stream events to the turn's channel, and throws AppError on
 * failure (the machine then runs `fail`).
 */
export function createTurnActors(deps: TurnActorDeps) {
  const { store, models, sessions, bus } = deps;

  const prepare = fromPromise<void, TurnStepInput>(async ({ input }) => {
    const s = sessions.get(input.turnId);
    const [history, passages] = await Promise.all([
      s.newConversation ? Promise.resolve([]) : store.conversations.history(s.conversationId, deps.historyLimit),
      s.agent.knowledge_base_ids.length > 0 && deps.retrievalK > 0
        ? store.knowledge.search(s.orgId, s.agent.knowledge_base_ids, s.question, deps.retrievalK)
        : Promise.resolve([]),
    ]);
    const messages: ModelMessage[] = [];
    if (s.agent.instructions) messages.push({ role: 'system', content: s.agent.instructions });
    for (const m of history) {
      // This turn's own question may not be committed yet (it is added below), and later turns queued
      // behind this one are not part of its past.
      if (m.turn_id !== null && m.turn_id >= s.turnId) continue;
      if (m.role === 'visitor') messages.push({ role: 'user', content: m.content });
      else if (m.role === 'agent') messages.push({ role: 'assistant', content: m.content });
      else messages.push({ role: 'assistant', content: `(operator) ${m.content}` });
    }
    messages.push({ role: 'user', content: s.question });
    s.messages = messages;
    s.passages = passages;
  });

  const generate = fromPromise<StepResult, TurnStepInput>(async ({ input, signal }) => {
    const s = sessions.get(input.turnId);
    const provider = models.get(s.agent.model.provider);
    const tools = s.agent.tools.map((t) => TOOL_SPECS[t]).filter((t): t is ModelToolSpec => t !== undefined);
    const toolCalls: TurnToolCall[] = [];
    let finishReason: StepResult['finishReason'] = 'stop';
    let reportedUsage = false;
    s.stepText = '';
    if (s.modelCalledAt === 0) s.modelCalledAt = performance.now();
    // The token hot path: each part is handled synchronously inside the provider's data callback.
    await provider.stream(
      { model: s.agent.model.name, messages: s.messages, passages: s.passages, tools },
      anySignal(signal, s.abort.signal),
      (part) => {
        switch (part.type) {
          case 'text-delta':
            s.text += part.delta;
            s.stepText += part.delta;
            s.channel.emit({ type: 'token', delta: part.delta });
            if (s.firstTokenAt === 0) {
              s.firstTokenAt = performance.now();
              deps.onFirstToken?.(s, {
                setupMs: s.modelCalledAt - s.acceptedAt,
                firstTokenMs: s.firstTokenAt - s.acceptedAt,
                relayMs: part.receivedAt === undefined ? undefined : s.firstTokenAt - part.receivedAt,
              });
            }
            break;
          case 'tool-call':
            toolCalls.push(part.call);
            break;
          case 'usage':
            s.inputTokens += part.usage.input_tokens;
            s.outputTokens += part.usage.output_tokens;
            reportedUsage = true;
            break;
          case 'finish':
            finishReason = part.reason;
            if (part.passagesUsed !== undefined) s.passagesUsed = part.passagesUsed;
            break;
        }
      },
    );
    if (!reportedUsage) {
      // The provider gave no counts: count them ourselves so usage is never missing.
      const [input, output] = await Promise.all([deps.tokens.count(s.messages, []), deps.tokens.count([], [s.stepText])]);
      s.inputTokens += input;
      s.outputTokens += output;
    }
    s.usageReported = true;
    return { finishReason, toolCalls };
  });

  const runTools = fromPromise<void, RunToolsInput>(async ({ input }) => {
    const s = sessions.get(input.turnId);
    s.messages.push({ role: 'assistant', content: s.stepText, tool_calls: input.calls });
    for (const call of input.calls) {
      const args = parseArguments(call.arguments);
      s.channel.emit({ type: 'tool_call', tool_call: { id: call.id, name: call.name, arguments: args } });
      let output: unknown;
      let isError = false;
      if (call.name === SEARCH_KNOWLEDGE && s.agent.tools.includes(SEARCH_KNOWLEDGE)) {
        const outcome = await runSearchKnowledge(store.knowledge, s.orgId, s.agent.knowledge_base_ids, call.arguments);
        output = outcome.output;
        isError = outcome.is_error;
        for (const p of outcome.passages) {
          if (!s.passages.some((q) => q.chunk_id === p.chunk_id)) s.passages.push(p);
        }
      } else {
        output = { error: `unknown tool "${call.name}"` };
        isError = true;
      }
      s.channel.emit({ type: 'tool_result', tool_result: { tool_call_id: call.id, name: call.name, output, is_error: isError } });
      s.toolRuns.push({ id: call.id, name: call.name, arguments: args, output, is_error: isError });
      s.messages.push({ role: 'tool', tool_call_id: call.id, name: call.name, content: JSON.stringify(output) });
      bus.publish({
        type: 'tool.run', org_id: s.orgId,
        data: { conversation_id: s.conversationId, turn_id: s.turnId, tool_call_id: call.id, name: call.name, is_error: isError },
      });
    }
  });

  const moderate = fromPromise<{ blocked: boolean }, FinishInput>(async ({ input }) => {
    const s = sessions.get(input.turnId);
    const verdict = checkSafety(s.text, s.agent.safety);
    const blocked = verdict.fired && verdict.blocked;
    s.channel.emit({ type: 'citations', citations: blocked ? [] : toCitations(s.passages, s.passagesUsed) });
    if (verdict.fired) {
      s.text = verdict.text;
      s.channel.emit({ type: 'replace', delta: verdict.text });
      if (blocked) s.passages = [];
    }
    return { blocked };
  });

  const persist = fromPromise<void, FinishInput>(async ({ input }) => {
    const s = sessions.get(input.turnId);
    if (!s.usageReported) s.inputTokens = await deps.tokens.count(s.messages, []);
    const usage = usageOf(s);
    const message: MessageRecord = {
      id: newId('msg'), conversation_id: s.conversationId, org_id: s.orgId, turn_id: s.turnId, role: 'agent',
      content: s.text, citations: s.passages.length === 0 ? [] : toCitations(s.passages, s.passagesUsed),
      tool_runs: s.toolRuns, usage, status: 'completed', finish_reason: input.finishReason, error: null,
      created_at: new Date().toISOString(),
    };
    await store.conversations.appendMessage(message);
    s.channel.emit({ type: 'message', message_id: message.id });
    s.channel.emit({ type: 'usage', usage });
    s.channel.emit({ type: 'done', finish_reason: input.finishReason });
    sessions.finish(s.turnId);
    deps.onTurnEnd?.(s, 'succeeded');
    bus.publish({ type: 'message.created', org_id: s.orgId, data: { conversation_id: s.conversationId, message_id: message.id, role: 'agent' } });
  });

  const fail = fromPromise<void, FailInput>(async ({ input }) => {
    const s = sessions.get(input.turnId);
    deps.logger.warn({ turn_id: s.turnId, conversation_id: s.conversationId, error: input.error }, 'turn failed');
    try {
      await store.conversations.appendMessage({
        id: newId('msg'), conversation_id: s.conversationId, org_id: s.orgId, turn_id: s.turnId, role: 'agent',
        content: s.text, citations: [], tool_runs: s.toolRuns, usage: usageOf(s), status: 'failed',
        finish_reason: null, error: input.error, created_at: new Date().toISOString(),
      });
    } catch (err) {
      deps.logger.error({ err, turn_id: s.turnId }, 'could not store the failed reply');
    } finally {
      s.channel.emit({ type: 'error', error: input.error });
      sessions.finish(s.turnId);
      deps.onTurnEnd?.(s, 'failed');
    }
  });

  return { prepare, generate, runTools, moderate, persist, fail };
}
