/**
 * collectReply (src/transport/http/one-shot.ts) reads a turn's channel as the turn's own client: every
 * event, whatever the replay kept for others; and it never waits forever on a channel with nothing to give.
 */
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/app-error.js';
import { TurnChannel } from '../../src/runtime/turn/turn-channel.js';
import { collectReply } from '../../src/transport/http/one-shot.js';

const finish = (ch: TurnChannel) => {
  ch.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' });
  ch.emit({ type: 'token', delta: 'Hello ' });
  ch.emit({ type: 'token', delta: 'there' });
  ch.emit({ type: 'message', message_id: 'msg_1' });
  ch.emit({ type: 'done', finish_reason: 'stop' });
};

describe('collectReply', () => {
  it('assembles the reply of its own turn that ended, and whose replay was dropped, before it subscribed', async () => {
    const ch = new TurnChannel('turn_1', 'conv_1', 'org_1', { maxChars: 1_000_000 }, undefined, true);
    finish(ch);
    ch.dropReplay();
    const { reply } = await collectReply(ch);
    expect(reply).toMatchObject({ conversation_id: 'conv_1', message_id: 'msg_1', content: 'Hello there', finish_reason: 'stop' });
  });

  it('rejects with internal_error, rather than waiting forever, when the events are no longer kept', async () => {
    const ch = new TurnChannel('turn_1', 'conv_1', 'org_1', { maxChars: 1_000_000 });
    finish(ch);
    ch.dropReplay();
    const err = await collectReply(ch).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('internal_error');
  });
});
