/**
 * An OpenAI chat completions request as a Parley turn (API.md "OpenAI-compatible",
 * docs/openai-compatible.md): which message is the visitor's, which history a new conversation starts
 * with, what the client adds to the agent's instructions, and which conversation it continues.
 */
import type { z } from 'zod';
import { AppError } from '../../../errors/app-error.js';
import type { HistoryMessage } from '../../../runtime/chat-service.js';
import type { ChatCompletionMessageSchema, ChatCompletionRequestSchema } from '../schemas.js';

type Message = z.infer<typeof ChatCompletionMessageSchema>;
type Request = z.infer<typeof ChatCompletionRequestSchema>;

/** Longest visitor message, characters (the native chat request's bound: API.md "Chat"). */
export const MAX_MESSAGE_CHARS = 32_000;
/** Longest client instructions (all `system` and `developer` messages together), characters. */
export const MAX_INSTRUCTIONS_CHARS = 32_000;

/** The header that names the conversation to continue, beside `metadata.conversation_id`. */
export const CONVERSATION_HEADER = 'x-parley-conversation-id';

const CONVERSATION_ID = /^conv_[0-9A-Za-z]{1,64}$/;

/** What a chat completions request asks of a turn. */
export interface CompletionTurn {
  /** The text of the last `user` message: the visitor message. */
  message: string;
  /** The conversation to continue; undefined: a new one. */
  conversationId: string | undefined;
  /**
   * A new conversation only (empty when continuing one): the `user` and `assistant` messages before the
   * visitor message, with text, oldest first, as visitor and agent messages.
   */
  history: HistoryMessage[];
  /** Every `system` and `developer` message's text, in order, joined by a blank line; undefined when none. */
  clientInstructions: string | undefined;
  /** A new conversation's metadata: the request's `metadata` without `conversation_id`. */
  metadata: Record<string, string>;
  stream: boolean;
  includeUsage: boolean;
}

function invalid(path: string, message: string): AppError {
  return new AppError('validation_failed', `The request body is invalid: ${path}: ${message}.`, { errors: [{ path, message }] });
}

/**
 * The text of message `i`: a string as it is; an array of content parts joined by a newline, from its
 * `text` parts (and an assistant's `refusal` parts); null content is ''. Throws AppError
 * `validation_failed` for a part that carries no text (an image, audio, a file): Parley's agents read text.
 */
export function messageText(m: Message, i: number): string {
  const content = m.content;
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  const texts: string[] = [];
  content.forEach((part, j) => {
    if (part.type === 'text') {
      if (part.text === undefined) throw invalid(`messages.${i}.content.${j}.text`, 'a text part needs its text');
      texts.push(part.text);
    } else if (part.type === 'refusal' && m.role === 'assistant') {
      if (part.refusal === undefined) throw invalid(`messages.${i}.content.${j}.refusal`, 'a refusal part needs its refusal');
      texts.push(part.refusal);
    } else {
      throw invalid(`messages.${i}.content.${j}.type`, `only text content is supported (got ${JSON.stringify(part.type)})`);
    }
  });
  return texts.join('\n');
}

/**
 * Maps a validated request (and the `X-Parley-Conversation-Id` header, if sent) to a turn. Rules
 * (API.md "OpenAI-compatible"):
 * - the last `user` message is the visitor message (1..32,000 characters); messages after it are ignored;
 * - `metadata.conversation_id` or the header continues that conversation (both: they must agree), and
 *   then the earlier messages are ignored; without one, the `user` and `assistant` messages before the
 *   visitor message (those with text) are the new conversation's history;
 * - `system` and `developer` messages, wherever they are, are the client's instructions for this turn;
 * - `tool` and `function` messages, and an assistant's tool calls, are ignored (the agent runs its own
 *   tools on the server).
 * Throws AppError `validation_failed` (400) with the offending path.
 */
export function completionTurn(body: Request, conversationHeader: string | undefined): CompletionTurn {
  const messages = body.messages;
  let last = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === 'user') { last = i; break; }
  }
  if (last < 0) throw invalid('messages', 'needs a message with role "user" (the visitor message)');
  const message = messageText(messages[last]!, last);
  if (message.length === 0) throw invalid(`messages.${last}.content`, 'the last user message has no text');
  if (message.length > MAX_MESSAGE_CHARS) throw invalid(`messages.${last}.content`, `the last user message is longer than ${MAX_MESSAGE_CHARS} characters`);

  const { conversation_id: fromMetadata, ...metadata } = body.metadata ?? {};
  if (fromMetadata !== undefined && conversationHeader !== undefined && fromMetadata !== conversationHeader) {
    throw invalid('metadata.conversation_id', 'differs from the X-Parley-Conversation-Id header');
  }
  const conversationId = fromMetadata ?? conversationHeader;
  if (conversationId !== undefined && !CONVERSATION_ID.test(conversationId)) {
    throw invalid(fromMetadata !== undefined ? 'metadata.conversation_id' : 'X-Parley-Conversation-Id', 'must be a conv_ id');
  }

  const instructions: string[] = [];
  const history: HistoryMessage[] = [];
  messages.forEach((m, i) => {
    if (m.role === 'system' || m.role === 'developer') {
      const text = messageText(m, i);
      if (text.length > 0) instructions.push(text);
    } else if (conversationId === undefined && i < last && (m.role === 'user' || m.role === 'assistant')) {
      const text = messageText(m, i);
      if (text.length > 0) history.push({ role: m.role === 'user' ? 'visitor' : 'agent', content: text });
    }
  });
  const clientInstructions = instructions.length > 0 ? instructions.join('\n\n') : undefined;
  if (clientInstructions !== undefined && clientInstructions.length > MAX_INSTRUCTIONS_CHARS) {
    throw invalid('messages', `the system and developer messages are longer than ${MAX_INSTRUCTIONS_CHARS} characters together`);
  }
  return {
    message, conversationId, history, clientInstructions, metadata,
    stream: body.stream === true, includeUsage: body.stream_options?.include_usage === true,
  };
}
