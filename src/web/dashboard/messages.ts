/**
 * Conversations and messages as the API shows them (API.md "Conversations and handoff", "WebSockets"),
 * from the generated src/web/api-types.ts (the dashboard imports nothing from the server). Types only, and
 * no DOM, so that the thread logic built on them can be tested in Node.
 */
import type { components } from '../api-types.js';

type Schemas = components['schemas'];

/** API.md "Conversations and handoff": who answers a conversation now. */
export type ConversationStatus = Schemas['ConversationStatus'];
export type Conversation = Schemas['Conversation'];
export type MessageRole = Schemas['MessageRole'];
/** A knowledge-base passage an agent reply used (`score`: higher is better; `heading` and `page` when known). */
export type Citation = Schemas['Citation'];
/** A tool the agent ran during a turn. */
export type ToolRun = Schemas['ToolRun'];
/** A stored message (`GET /v1/conversations/{id}/messages`). */
export type Message = Schemas['Message'];

/** A frame of a socket (API.md "WebSockets"): JSON objects with a `type`; the other fields depend on it. */
export type Frame = { type: string; [field: string]: unknown };
