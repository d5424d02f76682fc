import { Worker } from 'node:worker_threads';
import { createParser, type EventSourceMessage } from 'eventsource-parser';

/** One parsed SSE event: its `id:` and the JSON of its `data:` line. */
export interface SseEvent {
  id: string | undefined;
  data: Record<string, unknown> & { type: string };
}

/**
 * POSTs (or GETs) and reads the response as Server-Sent Events with eventsource-parser, calling
 * `onEvent` per event. Resolves with every event and the comment lines (e.g. `ping`) when the server
 * ends the stream, or when `onEvent` returns `'stop'` (the client then drops the connection).
 * Throws when the response is not 200 text/event-stream (the body is in the message).
 */
export async function readSse(
  url: string,
  init: RequestInit,
  onEvent?: (event: SseEvent, all: SseEvent[]) => void | 'stop',
): Promise<{ events: SseEvent[]; comments: string[]; response: Response; dropped: boolean }> {
  const controller = new AbortController();
  const response = await fetch(url, { ...init, signal: controller.signal });
  const type = response.headers.get('content-type') ?? '';
  if (response.status !== 200 || !type.startsWith('text/event-stream')) {
    throw new Error(`expected an event stream, got ${response.status} ${type}: ${await response.text()}`);
  }
  const events: SseEvent[] = [];
  const comments: string[] = [];
  let stop = false;
  const parser = createParser({
    onEvent(msg: EventSourceMessage) {
      if (stop) return;
      const ev: SseEvent = { id: msg.id, data: JSON.parse(msg.data) as SseEvent['data'] };
      events.push(ev);
      if (onEvent?.(ev, events) === 'stop') stop = true;
    },
    onComment(comment: string) { comments.push(comment.trim()); },
  });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  try {
    while (!stop) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
    }
  } finally {
    if (stop) controller.abort();
  }
  return { events, comments, response, dropped: stop };
}

/**
 * Like {@link readSse}, but the client runs on a worker thread (test/helpers/sse-reader.worker.mjs), so it
 * reads as fast as the socket delivers even while the server, which tests run in the test's own thread,
 * keeps that thread busy writing. Resolves with the HTTP status, every event, and whether the stream was
 * cut before it ended (`dropped`). `init` must be structured-cloneable (plain headers and a string body).
 */
export function readSseInThread(url: string, init: { method: string; headers: Record<string, string>; body?: string }): Promise<{ status: number; events: SseEvent[]; dropped: boolean }> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./sse-reader.worker.mjs', import.meta.url), { workerData: { url, init } });
    worker.once('message', (result: { status: number; events: SseEvent[]; dropped: boolean }) => {
      resolve(result);
      void worker.terminate();
    });
    worker.once('error', reject);
  });
}

/** Polls `check` every 20 ms until it returns a value other than undefined, or throws after `timeoutMs`. */
export async function waitFor<T>(check: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
