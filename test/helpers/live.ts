/**
 * Helpers of the live-channel integration tests (sockets, public endpoints, handoff): agents, published
 * keys, socket URLs, and checks of frame shapes against the zod schemas of src/transport/ws/frames.ts.
 */
import { expect } from 'vitest';
import { ErrorFrame, OperatorPushFrame, StoredMessageFrame, StreamFrame } from '../../src/transport/ws/frames.js';
import type { TestServer } from './server.js';
import type { Frame } from './ws-client.js';

/** `ws://host:port<path>` of the test server. */
export function wsUrl(srv: TestServer, path: string): string {
  return `${srv.url.replace(/^http/, 'ws')}${path}`;
}

/** Creates an agent with `body` (name required) and returns its id; fails the test unless 201. */
export async function createAgent(srv: TestServer, body: Record<string, unknown>): Promise<string> {
  const r = await srv.api('/v1/agents', { body });
  expect(r.status, await r.clone().text()).toBe(201);
  return ((await r.json()) as { id: string }).id;
}

/** Publishes agent `agentId`; its public key. */
export async function publish(srv: TestServer, agentId: string): Promise<string> {
  const r = await srv.api(`/v1/agents/${agentId}/publish`, { method: 'POST' });
  expect(r.status, await r.clone().text()).toBe(200);
  const { public_key } = (await r.json()) as { public_key: string };
  expect(public_key).toMatch(/^pk_[A-Za-z0-9_-]{32}$/);
  return public_key;
}

/** The stream frames of one turn: each is a StreamFrame (a stream event with conversation_id). */
export function expectStreamFrames(frames: Frame[], conversationId: string): void {
  for (const f of frames) {
    expect(StreamFrame.safeParse(f).success, `not a stream frame: ${JSON.stringify(f)}`).toBe(true);
    expect(f.conversation_id).toBe(conversationId);
  }
}

/** Checks an error frame and returns its code. */
export function errorCode(f: Frame): string {
  expect(ErrorFrame.safeParse(f).success, `not an error frame: ${JSON.stringify(f)}`).toBe(true);
  return (f.error as { code: string }).code;
}

/** The three frames of an operator push, checked: `token` (whole text), `message`, `done`, role operator. */
export function expectOperatorPush(frames: Frame[], conversationId: string, content: string, messageId: string): void {
  for (const f of frames) expect(OperatorPushFrame.safeParse(f).success, `not an operator push: ${JSON.stringify(f)}`).toBe(true);
  expect(frames).toEqual([
    { type: 'token', delta: content, role: 'operator', conversation_id: conversationId },
    { type: 'message', message_id: messageId, role: 'operator', conversation_id: conversationId },
    { type: 'done', finish_reason: 'stop', role: 'operator', conversation_id: conversationId },
  ]);
}

/** A stored-message frame (catch-up, operator view), checked; its `[role, content]`. */
export function storedMessage(f: Frame): [string, string] {
  expect(StoredMessageFrame.safeParse(f).success, `not a stored message frame: ${JSON.stringify(f)}`).toBe(true);
  return [f.role as string, f.content as string];
}

/** Token text of frames. */
export function tokenText(frames: Frame[]): string {
  return frames.filter((f) => f.type === 'token').map((f) => f.delta as string).join('');
}

/** Frame types in order. */
export const typesOf = (frames: Frame[]): string[] => frames.map((f) => f.type);

/** The `sid` claim of an access token (the sign-in). */
export function sidOf(accessToken: string): string {
  return (JSON.parse(Buffer.from(accessToken.split('.')[1]!, 'base64url').toString('utf8')) as { sid: string }).sid;
}
