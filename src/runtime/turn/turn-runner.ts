/**
 * The turn's work, as plain async code over one Turn object: the turn actor, a callback invoked by the
 * conversation machine (actors/conversation/conversation.machine.ts), provided by `createTurnRunLogic`.
 * It tells its conversation `turn.ended` once, when it is over. Steps, in order:
 *
 * 1. prepare: history (skipped for a new conversation) and retrieval, in parallel;
 * 2. generate: one model call, tokens straight to the channel (the hot path: one synchronous callback
 *    per part, no machine transition per token);
 * 3. tools: run the calls the model asked for, then generate again, bounded by `maxSteps`
 *    (actors/turn/turn.rules.ts);
 * 4. finish: safety check on the finished text (`citations`, then `replace` when it fired), store the
 *    reply, then `message`, `usage`, `done`;
 * on failure: store a `failed` reply and emit `error`. A cancel keeps what was said (`cancelled`, or
 * `handoff` when a handoff stopped the turn). The `handoff_to_human` tool asks for a person through
 * `deps.requestHandoff` and ends the turn with finish reason `handoff` (no further model call).
 *
 * Each step first checks that its turn is still alive; a withdrawn turn (visitor message not stored)
 * ends there, writes nothing, and says why in the log.
 */
import { fromCallback } from 'xstate';
import { afterGeneration } from '../../../actors/turn/turn.rules.js';
import type { TurnCommand, TurnEnded, TurnInput, TurnOutput } from '../../../actors/turn/turn.types.js';
import { AppError, toAppError } from '../../errors/app-error.js';
import type { EventBus } from '../../events/event-bus.js';
import type { Outbox, StoredEvent } from '../../events/outbox.js';
import { newId } from '../../ids/ids.js';
import { toCitations } from '../../knowledge/citations.js';
import type { KnowledgeSearch } from '../../knowledge/hybrid-search.js';
import type { Logger } from '../../log/logger.js';
import { checkSafety } from '../../moderation/safety-check.js';
import type { ModelFinishReason, ModelMessage, ModelToolCall, ModelToolSpec, Passage } from '../../models/port.js';
import type { ModelRegistry } from '../../models/registry.js';
import type { TokenCounter } from '../../models/token-counter.js';
import type { Store } from '../../store/ports.js';
import type { MessageRecord, ToolRunRecord } from '../../store/records.js';
import { httpToolSpec, runHttpTool } from '../../tools/http-tool.js';
import type { AgentTool, HttpTool } from '../../vocabulary/agent.js';
import type { Agent } from 'undici';
import { HANDOFF_TO_HUMAN, handoffReason, handoffToHumanSpec } from '../../tools/handoff-to-human.js';
import { runSearchKnowledge, SEARCH_KNOWLEDGE, searchKnowledgeSpec } from '../../tools/search-knowledge.js';
import type { FinishReason, TurnError } from '../../vocabulary/turn.js';
import type { LiveHub } from '../live/live-hub.js';
import { messageCreated, toolRun } from '../webhooks/event-data.js';
import { CANCELLED, HANDED_OFF, type Turn } from './turn.js';

/** Dependencies of the turn's work. */
export interface TurnRunnerDeps {
  store: Store;
  models: ModelRegistry;
  bus: EventBus;
  logger: Logger;
  /** Counts usage when the provider does not report it. */
  tokens: TokenCounter;
  /** Passages retrieved before generation. */
  retrievalK: number;
  /**
   * The knowledge search of retrieval and of the `search_knowledge` tool (src/knowledge/hybrid-search.ts:
   * bm25, fused with vector search when embeddings are configured).
   */
  search: KnowledgeSearch;
  /** Stored messages handed to the model as history. */
  historyLimit: number;
  /**
   * Observes each ended turn: `succeeded` (done), `failed` (error event) or `withdrawn`. The turn's step
   * times (Turn `arrivedAt`, `modelCalledAt`, `firstTokenReceivedAt`, `firstTokenAt`) are final by then:
   * metrics read them here, after the first token went out, not on its way.
   */
  onTurnEnd?: (turn: Turn, outcome: 'succeeded' | 'failed' | 'withdrawn') => void;
  /** Live subscribers of stored replies (sockets, the inbox); O(1) when nobody listens. */
  live?: LiveHub;
  /**
   * Asks for a person on behalf of the turn's agent (its `handoff_to_human` tool): the conversation goes
   * to `pending_handoff` (stored before this resolves) and the turn itself runs on to its end. Resolves
   * with the conversation's status afterwards. Without it, the tool answers with an error the model reads.
   */
  requestHandoff?: (turn: Turn, reason: string | undefined) => Promise<string>;
  /**
   * What HTTP tools need from the server: the guarded undici Agent their requests go through
   * (src/net/outbound-guard.ts) and the `PARLEY_TOOL_SECRET_*` values. Without it, an HTTP tool call
   * answers with an error the model reads.
   */
  httpTools?: { dispatcher: Agent; secrets: ReadonlyMap<string, string> };
  /**
   * The webhook outbox: each tool call's `tool.run` is stored in the commit of its tool run record, and
   * the reply's `message.created` in the commit of the reply. Without it, none.
   */
  outbox?: Outbox;
}

/**
 * Stores the turn's reply with its webhook events (the outbox), then announces what the commit wrote:
 * the events (to the dispatcher) and the `usage.threshold` events the store fired (also on the bus).
 */
async function storeReply(turn: Turn, message: MessageRecord, deps: Pick<TurnRunnerDeps, 'store' | 'outbox' | 'bus'>): Promise<void> {
  let events: StoredEvent[] | undefined;
  if (deps.outbox?.wants(turn.orgId)) events = deps.outbox.events(turn.orgId, [messageCreated(message, turn.agent.id)], message.created_at);
  const fired: StoredEvent[] = await deps.store.conversations.appendMessage(message, events, turn.fence);
  deps.outbox?.committed(events);
  if (fired.length > 0) {
    deps.outbox?.committed(fired);
    for (const e of fired) deps.bus.publish({ type: 'usage.threshold', org_id: e.org_id, data: e.data });
  }
}

const TOOL_SPECS: Record<string, ModelToolSpec> = { [SEARCH_KNOWLEDGE]: searchKnowledgeSpec, [HANDOFF_TO_HUMAN]: handoffToHumanSpec };

/** The tools an agent offers its model: built-in tools by name, HTTP tools from their definition. */
function toolSpecs(tools: AgentTool[]): ModelToolSpec[] {
  const out: ModelToolSpec[] = [];
  for (const t of tools) {
    const spec = typeof t === 'string' ? TOOL_SPECS[t] : httpToolSpec(t);
    if (spec !== undefined) out.push(spec);
  }
  return out;
}

/** The agent's HTTP tool named `name`, if it has one. */
function httpToolOf(tools: AgentTool[], name: string): HttpTool | undefined {
  for (const t of tools) if (typeof t !== 'string' && t.name === name) return t;
  return undefined;
}

/** The turn was withdrawn (its visitor message was not stored): stop without writing anything. */
class TurnGone extends Error {}

function parseArguments(raw: string): unknown {
  try { return JSON.parse(raw); } catch { return raw; }
}

/** The `error` text of a tool output `{error}`, else a generic reason. */
function errorText(output: unknown): string {
  const e = (output as { error?: unknown } | null)?.error;
  return typeof e === 'string' ? e.slice(0, 500) : 'the tool reported an error';
}

/** Any thrown value as the `error` of an error event: AppErrors keep their code, the rest is internal. */
function turnErrorOf(err: unknown): TurnError {
  const e = toAppError(err);
  return { type: e.type, code: e.code, message: e.message };
}

/**
 * The turn actor's logic: `conversationMachine.provide({ actors: { turn: createTurnRunLogic(deps) } })`.
 * It runs the turn given as input (or adopts its run when the runtime started it early, see
 * {@link startTurn}) and sends `turn.ended` to its conversation when it is over; a `cancel` from the
 * conversation cancels the turn. When the actor is stopped (its conversation crashed or shut down) while
 * the turn still runs, the turn is aborted and ends with a stored failed reply.
 */
export function createTurnRunLogic(deps: TurnRunnerDeps) {
  return fromCallback<TurnCommand, TurnInput>(({ input, sendBack, receive }) => {
    const turn = input.turn as Turn;
    receive((cmd) => { if (cmd.type === 'cancel') turn.cancel(cmd.reason); });
    void startTurn(turn, input.maxSteps, deps).then((output) => sendBack({ type: 'turn.ended', output } satisfies TurnEnded));
    return () => {
      if (!turn.ended) turn.abort(new AppError('internal_error', 'The conversation stopped during this turn; send the message again.'));
    };
  });
}

const WITHDRAWN = { type: 'api_error', code: 'internal_error', message: 'The turn was withdrawn.' } as const;

/**
 * Starts the turn's work (steps 1 to 4) unless it already started, and returns its run (kept on the turn
 * as `turn.run`): a promise of how it ended that never rejects. The turn actor calls it when its
 * conversation invokes it. The runtime calls it earlier for the first turn of a new conversation, whose
 * actor always takes it at once: when the turn needs neither history nor retrieval, its set-up is
 * synchronous, so the model request is handed to undici before the conversation actor is created.
 * undici (7.28 and later) writes a request on a reused keep-alive connection only in the event loop's
 * check phase (a setImmediate that first lets the idle socket show stray bytes), so the runtime creates
 * the actor after that write (chat-service.ts `afterModelRequestWrite`). Measured at one stream, three
 * alternating pairs per upstream: added first token p50 1.97 -> 1.78 ms with the first delta at once,
 * 1.83 -> 1.55 ms with it 3 ms after the request (the request left about 0.45 ms earlier; these runs also
 * include the actor starting on its first turn, conversation.machine.ts `firstTurn`). Nothing of
 * the turn reaches a client earlier for it: its channel is still handed out once the visitor message
 * is durable.
 */
export function startTurn(turn: Turn, maxSteps: number, deps: TurnRunnerDeps): Promise<TurnOutput> {
  if (turn.run !== undefined) return turn.run;
  const run = runSteps(turn, maxSteps, deps);
  turn.run = run;
  return run;
}

/**
 * Steps 1 to 4, then frees the turn's admission slot if the model was never called. One async function
 * for the whole turn, not a chain (`.finally` here would keep one more promise and closure per live stream).
 */
async function runSteps(turn: Turn, maxSteps: number, deps: TurnRunnerDeps): Promise<TurnOutput> {
  let finishReason: FinishReason;
  turn.startedAt = performance.now();
  try {
    finishReason = await generateReply(turn, maxSteps, deps);
    await finish(turn, finishReason, deps);
  } catch (err) {
    if (err instanceof TurnGone || turn.withdrawnReason !== undefined) {
      deps.logger.info({ turn_id: turn.id, conversation_id: turn.conversationId, reason: turn.withdrawnReason }, 'turn withdrawn before it answered; nothing stored');
      deps.onTurnEnd?.(turn, 'withdrawn');
      return { turnId: turn.id, outcome: 'failed', error: WITHDRAWN };
    }
    const error = turnErrorOf(err);
    await fail(turn, error, deps);
    return { turnId: turn.id, outcome: 'failed', error };
  } finally {
    turn.setupDone();
  }
  return { turnId: turn.id, outcome: 'succeeded', finishReason };
}

/** Throws TurnGone when the turn was withdrawn; `step` names where, for the log. */
function ensureAlive(turn: Turn, step: string, logger: Logger): void {
  if (turn.withdrawnReason === undefined) return;
  logger.debug({ turn_id: turn.id, step }, 'turn gone before step');
  throw new TurnGone(step);
}

/**
 * How the turn was stopped, if it was: `cancelled` (a client's cancel, a close of the conversation) or
 * `handoff` (a handoff stopped it); undefined while it runs or when it was aborted for a failure.
 */
function stoppedAs(turn: Turn): 'cancelled' | 'handoff' | undefined {
  if (!turn.signal.aborted) return undefined;
  const reason: unknown = turn.signal.reason;
  if (reason === CANCELLED) return 'cancelled';
  if (reason === HANDED_OFF) return 'handoff';
  return undefined;
}

/** Steps 1-3; resolves with the finish reason, rejects with the failure. */
async function generateReply(turn: Turn, maxSteps: number, deps: TurnRunnerDeps): Promise<FinishReason> {
  ensureAlive(turn, 'prepare', deps.logger);
  const prepared = prepare(turn, deps);
  if (prepared !== undefined) await prepared;
  let stopped = stoppedAs(turn);
  if (stopped) return stopped;
  for (let step = 1; ; step++) {
    ensureAlive(turn, 'generate', deps.logger);
    let outcome: { finishReason: ModelFinishReason; toolCalls: ModelToolCall[] };
    try {
      outcome = await generate(turn, deps);
    } catch (err) {
      stopped = stoppedAs(turn);
      if (stopped) return stopped;
      throw err;
    }
    stopped = stoppedAs(turn);
    if (stopped) return stopped;
    const next = afterGeneration(step, maxSteps, { finishReason: outcome.finishReason, toolCalls: outcome.toolCalls.length });
    if (next.next === 'finish') return next.finishReason;
    ensureAlive(turn, 'tools', deps.logger);
    await runTools(turn, outcome.toolCalls, deps);
    stopped = stoppedAs(turn);
    if (stopped) return stopped;
    // A person was asked for: the agent says nothing more.
    if (turn.handedOff) return 'handoff';
  }
}

/**
 * Step 1: the model context. Synchronous (returns undefined) when there is nothing to load: a new
 * conversation has no history to read (only the seed history it was started with, in memory), and an
 * agent without knowledge (or with retrievalK 0) retrieves nothing.
 */
function prepare(turn: Turn, deps: TurnRunnerDeps): Promise<void> | undefined {
  const loadHistory = !turn.newConversation;
  const retrieve = turn.agent.knowledge_base_ids.length > 0 && deps.retrievalK > 0;
  const seed = seedHistoryOf(turn, deps.historyLimit);
  if (!loadHistory && !retrieve) {
    setContext(turn, seed, []);
    return undefined;
  }
  return Promise.all([
    loadHistory ? deps.store.conversations.history(turn.conversationId, deps.historyLimit) : seed,
    retrieve ? deps.search(turn.orgId, turn.agent.knowledge_base_ids, turn.question, deps.retrievalK) : [],
  ]).then(([history, passages]) => setContext(turn, history, passages));
}

/** The last `limit` messages of a new conversation's seed history (none for other turns). */
function seedHistoryOf(turn: Turn, limit: number): MessageRecord[] {
  const seed = turn.seedHistory;
  if (seed === undefined || !turn.newConversation) return [];
  return seed.length > limit ? seed.slice(seed.length - limit) : seed;
}

/**
 * The turn's model messages (the agent's instructions, the client's, history, its question) and
 * retrieved passages.
 */
function setContext(turn: Turn, history: MessageRecord[], passages: Passage[]): void {
  const messages: ModelMessage[] = [];
  if (turn.agent.instructions) messages.push({ role: 'system', content: turn.agent.instructions });
  // The client's instructions come after the agent's: they add to them and never replace them.
  if (turn.clientInstructions) messages.push({ role: 'system', content: turn.clientInstructions });
  for (const m of history) {
    // This turn's own question may not be committed yet (it is added below), and later turns queued
    // behind this one are not part of its past.
    if (m.turn_id !== null && m.turn_id >= turn.id) continue;
    if (m.role === 'visitor') messages.push({ role: 'user', content: m.content });
    else if (m.role === 'agent') messages.push({ role: 'assistant', content: m.content });
    else messages.push({ role: 'assistant', content: `(operator) ${m.content}` });
  }
  messages.push({ role: 'user', content: turn.question });
  turn.messages = messages;
  turn.passages = passages;
}

/** One model call; tokens go to the channel as they arrive. */
async function generate(turn: Turn, deps: TurnRunnerDeps): Promise<{ finishReason: ModelFinishReason; toolCalls: ModelToolCall[] }> {
  const provider = deps.models.get(turn.agent.model.provider);
  const tools = toolSpecs(turn.agent.tools);
  const toolCalls: ModelToolCall[] = [];
  let finishReason: ModelFinishReason = 'stop';
  let reportedUsage = false;
  let stepText = '';
  if (turn.modelCalledAt === 0) {
    turn.modelCalledAt = performance.now();
    turn.setupDone();
  }
  await provider.stream(
    { model: turn.agent.model.name, messages: turn.messages, passages: turn.passages, tools },
    turn.signal,
    (part) => {
      switch (part.type) {
        case 'text-delta':
          turn.text += part.delta;
          stepText += part.delta;
          turn.emit({ type: 'token', delta: part.delta });
          if (turn.firstTokenAt === 0) {
            turn.firstTokenAt = performance.now();
            if (part.receivedAt !== undefined) turn.firstTokenReceivedAt = part.receivedAt;
          }
          break;
        case 'tool-call':
          toolCalls.push(part.call);
          break;
        case 'usage':
          turn.inputTokens += part.usage.input_tokens;
          turn.outputTokens += part.usage.output_tokens;
          reportedUsage = true;
          break;
        case 'finish':
          finishReason = part.reason;
          if (part.passagesUsed !== undefined) turn.passagesUsed = part.passagesUsed;
          break;
      }
    },
  );
  if (!reportedUsage) {
    // The provider gave no counts: count them ourselves so usage is never missing.
    const [input, output] = await Promise.all([deps.tokens.count(turn.messages, []), deps.tokens.count([], [stepText])]);
    turn.inputTokens += input;
    turn.outputTokens += output;
  }
  if (toolCalls.length > 0) turn.messages.push({ role: 'assistant', content: stepText, tool_calls: toolCalls });
  return { finishReason, toolCalls };
}

async function runTools(turn: Turn, calls: ModelToolCall[], deps: TurnRunnerDeps): Promise<void> {
  for (const call of calls) {
    if (stoppedAs(turn) !== undefined) return;
    const args = parseArguments(call.arguments);
    turn.emit({ type: 'tool_call', tool_call: { id: call.id, name: call.name, arguments: args } });
    let output: unknown;
    let isError = false;
    const started = performance.now();
    let run: Pick<ToolRunRecord, 'kind' | 'status' | 'http_status' | 'error' | 'response_bytes'> | undefined;
    const httpTool = httpToolOf(turn.agent.tools, call.name);
    if (httpTool !== undefined) {
      if (deps.httpTools === undefined) {
        output = { error: 'HTTP tools are not available on this server' };
        isError = true;
      } else {
        const outcome = await runHttpTool(httpTool, call.arguments, { ...deps.httpTools, signal: turn.cancellation.toSignal() });
        output = outcome.output;
        isError = outcome.is_error;
        run = { kind: 'http', status: outcome.status, http_status: outcome.http_status, error: outcome.error, response_bytes: outcome.response_bytes };
        if (outcome.detail !== undefined) deps.logger.info({ turn_id: turn.id, tool: call.name, detail: outcome.detail }, 'HTTP tool destination refused');
      }
    } else if (call.name === HANDOFF_TO_HUMAN && turn.agent.tools.includes(HANDOFF_TO_HUMAN) && deps.requestHandoff !== undefined) {
      try {
        const status = await deps.requestHandoff(turn, handoffReason(call.arguments));
        output = { status };
        turn.handedOff = true;
      } catch (err) {
        output = { error: toAppError(err).message };
        isError = true;
      }
    } else if (call.name === SEARCH_KNOWLEDGE && turn.agent.tools.includes(SEARCH_KNOWLEDGE)) {
      const outcome = await runSearchKnowledge(deps.search, turn.orgId, turn.agent.knowledge_base_ids, call.arguments);
      output = outcome.output;
      isError = outcome.is_error;
      for (const p of outcome.passages) {
        if (!turn.passages.some((q) => q.chunk_id === p.chunk_id)) turn.passages.push(p);
      }
    } else {
      output = { error: `unknown tool "${call.name}"` };
      isError = true;
    }
    const durationMs = Math.round(performance.now() - started);
    run ??= {
      kind: httpTool !== undefined ? 'http' : (turn.agent.tools as unknown[]).includes(call.name) ? 'builtin' : 'unknown',
      status: isError ? 'failed' : 'succeeded', http_status: null,
      error: isError ? errorText(output) : null, response_bytes: 0,
    };
    const ran = { id: call.id, name: call.name, arguments: args, output, is_error: isError };
    turn.toolRuns.push(ran);
    turn.messages.push({ role: 'tool', tool_call_id: call.id, name: call.name, content: JSON.stringify(output) });
    const record: ToolRunRecord = {
      id: newId('trun'), org_id: turn.orgId, agent_id: turn.agent.id, conversation_id: turn.conversationId, turn_id: turn.id,
      tool_call_id: call.id, name: call.name, ...run, duration_ms: durationMs, created_at: new Date().toISOString(),
    };
    // The run's tool.run goes out with its record, as soon as the tool has run: a turn cut short later
    // (a crash, a cancel) still reports the call it made.
    const events = deps.outbox?.events(turn.orgId, [toolRun(ran, record)], record.created_at);
    try {
      await deps.store.toolRuns.record(record, events, turn.fence);
      deps.outbox?.committed(events);
    } catch (err) {
      // The run itself happened and the model has its result: a lost history row must not fail the turn.
      deps.logger.error({ err, turn_id: turn.id, tool_run_id: record.id }, 'could not record a tool run');
    }
    // The client hears of the result only once its record is stored: a crash after this event loses
    // nothing the client was told (a store failure, logged above, still lets the turn go on).
    turn.emit({ type: 'tool_result', tool_result: { tool_call_id: call.id, name: call.name, output, is_error: isError } });
    deps.bus.publish({
      type: 'tool.run', org_id: turn.orgId,
      data: {
        conversation_id: turn.conversationId, turn_id: turn.id, tool_call_id: call.id, name: call.name, is_error: isError,
        tool_run_id: record.id, agent_id: turn.agent.id, kind: record.kind, status: record.status, http_status: record.http_status,
        error: record.error, duration_ms: record.duration_ms,
      },
    });
  }
}

/** Step 4: safety check, store the reply, then `message`, `usage`, `done`. */
async function finish(turn: Turn, reason: FinishReason, deps: TurnRunnerDeps): Promise<void> {
  ensureAlive(turn, 'finish', deps.logger);
  const verdict = checkSafety(turn.text, turn.agent.safety);
  const blocked = verdict.fired && verdict.blocked;
  const citations = blocked ? [] : toCitations(turn.passages, turn.passagesUsed);
  turn.emit({ type: 'citations', citations });
  if (verdict.fired) {
    turn.text = verdict.text;
    turn.emit({ type: 'replace', delta: verdict.text });
  }
  const finishReason: FinishReason = blocked ? 'content_filter' : reason;
  if (turn.inputTokens === 0 && turn.outputTokens === 0 && turn.messages.length > 0) {
    // Cancelled before any model call finished: count the input we would have sent.
    turn.inputTokens = await deps.tokens.count(turn.messages, []);
  }
  // One figure for the stored reply and the `usage` event: the reply is complete, not yet stored.
  const timing = turn.timing(performance.now());
  const message: MessageRecord = {
    id: newId('msg'), conversation_id: turn.conversationId, org_id: turn.orgId, turn_id: turn.id, role: 'agent',
    content: turn.text, citations, tool_runs: turn.toolRuns, usage: turn.usage, status: 'completed',
    finish_reason: finishReason, error: null, timing, created_at: new Date().toISOString(),
  };
  ensureAlive(turn, 'store reply', deps.logger);
  await storeReply(turn, message, deps);
  // Live watchers learn of the stored reply before the turn's end (the inbox: message.created, then turn.ended).
  deps.live?.messageCreated(message);
  turn.emit({ type: 'message', message_id: message.id });
  turn.emit({ type: 'usage', usage: turn.usage, timing });
  turn.emit({ type: 'done', finish_reason: finishReason });
  deps.onTurnEnd?.(turn, 'succeeded');
  deps.bus.publish({ type: 'message.created', org_id: turn.orgId, data: { conversation_id: turn.conversationId, message_id: message.id, role: 'agent' } });
}

/**
 * A queued turn that will never run, because a person was asked for or took over before it started
 * (the conversation machine dropped it from the queue): its visitor message is taken out of the turn
 * (so start-up recovery does not count it as cut short) and forwarded to the operators, and its stream
 * ends the way a message sent during a handoff does: `message` (the visitor message) and `done` /
 * `handoff` (API.md "Chat"). Never rejects; a failed write ends the stream with `error`.
 */
export async function forwardQueuedTurn(turn: Turn, deps: Pick<TurnRunnerDeps, 'store' | 'logger' | 'live'>): Promise<void> {
  turn.setupDone();
  if (turn.ended) return;
  try {
    await deps.store.conversations.detachFromTurn(turn.visitorMessageId, turn.fence === undefined ? undefined : { conversationId: turn.conversationId, fence: turn.fence });
    turn.emit({ type: 'message', message_id: turn.visitorMessageId });
    turn.emit({ type: 'done', finish_reason: 'handoff' });
  } catch (err) {
    deps.logger.error({ err, turn_id: turn.id }, 'could not forward a queued message to the operators');
    turn.emit({ type: 'error', error: turnErrorOf(err) });
  }
}

/**
 * A queued turn that will never run because its conversation was closed before it started: it fails
 * with `conversation_closed` (a stored failed reply, then `error`), like any turn that cannot answer.
 */
export async function closeQueuedTurn(turn: Turn, deps: TurnRunnerDeps): Promise<void> {
  turn.setupDone();
  if (turn.ended) return;
  await fail(turn, { type: 'conflict_error', code: 'conversation_closed', message: 'The conversation was closed before this message was answered.' }, deps);
}

/** Stores the failed reply (best effort) and ends the stream with `error`. Never rejects. */
async function fail(turn: Turn, error: TurnError, deps: TurnRunnerDeps): Promise<void> {
  deps.logger.warn({ turn_id: turn.id, conversation_id: turn.conversationId, error }, 'turn failed');
  try {
    await storeReply(turn, {
      id: newId('msg'), conversation_id: turn.conversationId, org_id: turn.orgId, turn_id: turn.id, role: 'agent',
      content: turn.text, citations: [], tool_runs: turn.toolRuns, usage: turn.usage, status: 'failed',
      finish_reason: null, error, timing: turn.timing(performance.now()), created_at: new Date().toISOString(),
    }, deps);
  } catch (err) {
    deps.logger.error({ err, turn_id: turn.id }, 'could not store the failed reply');
  } finally {
    turn.emit({ type: 'error', error });
    deps.onTurnEnd?.(turn, 'failed');
  }
}
