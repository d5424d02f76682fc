/**
 * The widget's SSE reading (src/web/widget/api.ts readEventStream) on a real fetch Response body fed in
 * chunks that split lines, line ends and events where a network would.
 */
import { describe, expect, it } from 'vitest';
import { ApiError, readEventStream, type StreamEvent } from '../../src/web/widget/api.js';

/** A Response whose body yields `chunks` (strings, as UTF-8) one read at a time. */
function responseOf(chunks: Array<string | Uint8Array>, fail?: Error): Response {
  const enc = new TextEncoder();
  let i = 0;
  return new Response(new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < chunks.length) {
        const c = chunks[i++]!;
        controller.enqueue(typeof c === 'string' ? enc.encode(c) : c);
      } else if (fail !== undefined) controller.error(fail);
      else controller.close();
    },
  }));
}

async function read(chunks: Array<string | Uint8Array>): Promise<Array<[StreamEvent, number]>> {
  const out: Array<[StreamEvent, number]> = [];
  await readEventStream(responseOf(chunks), (e, seq) => out.push([e, seq]));
  return out;
}

describe('readEventStream', () => {
  it('gives each event its JSON and the seq of its <turn_id>:<seq> id, skipping comments', async () => {
    expect(await read([
      'id: turn_1:1\ndata: {"type":"conversation","conversation_id":"conv_1","turn_id":"turn_1"}\n\n',
      ': ping\n\n',
      'id: turn_1:2\ndata: {"type":"token","delta":"Hel"}\n\nid: turn_1:3\ndata: {"type":"token","delta":"lo"}\n\n',
    ])).toEqual([
      [{ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' }, 1],
      [{ type: 'token', delta: 'Hel' }, 2],
      [{ type: 'token', delta: 'lo' }, 3],
    ]);
  });

  it('joins lines and events split across reads, a CRLF split between two reads included', async () => {
    expect(await read([
      'data: {"type":"tok', 'en","delta":"a b"}\r', '\nid: turn_7:1', '2\r\n\r', '\nid: turn_7:13\r\ndata: {"type":"done","finish_reason":"stop"}\r\n\r\n',
    ])).toEqual([
      [{ type: 'token', delta: 'a b' }, 12],
      [{ type: 'done', finish_reason: 'stop' }, 13],
    ]);
  });

  it('decodes a multi-byte character split between two reads; an event without an id has seq 0', async () => {
    const bytes = new TextEncoder().encode('data: {"type":"token","delta":"€"}\n\n');
    const cut = bytes.indexOf(0xe2) + 1;
    expect(await read([bytes.slice(0, cut), bytes.slice(cut)])).toEqual([[{ type: 'token', delta: '€' }, 0]]);
  });

  it('a broken connection or an event that is not JSON is a network_error ApiError (status 0)', async () => {
    const broken = readEventStream(responseOf(['data: {"type":"token","delta":"a"}\n\n'], new TypeError('terminated')), () => {});
    await expect(broken).rejects.toMatchObject({ status: 0, code: 'network_error', message: 'The connection to the chat service dropped.' });
    const garbled = readEventStream(responseOf(['data: {"type":\n\n']), () => {});
    await expect(garbled).rejects.toBeInstanceOf(ApiError);
  });

  it('an abort (the visitor left, or a new message replaced this one) is thrown as it is, not as a network error', async () => {
    const abort = new DOMException('The operation was aborted.', 'AbortError');
    const aborted = readEventStream(responseOf(['data: {"type":"token","delta":"a"}\n\n'], abort), () => {});
    await expect(aborted).rejects.toBe(abort);
  });
});
