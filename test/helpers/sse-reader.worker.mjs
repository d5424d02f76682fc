// A streaming chat client on its own thread (test/helpers/sse-client.ts, readSseInThread): it fetches
// `workerData.url` with `workerData.init`, parses the Server-Sent Events with eventsource-parser as
// they arrive, and posts back {status, events, dropped}. On its own event loop it reads at the
// socket's speed, as a separate client would, whatever the thread running the server is doing.
import { parentPort, workerData } from 'node:worker_threads';
import { createParser } from 'eventsource-parser';

const { url, init } = workerData;
const events = [];
let status = 0;
let dropped = false;
try {
  const response = await fetch(url, init);
  status = response.status;
  const parser = createParser({ onEvent: (msg) => events.push({ id: msg.id, data: JSON.parse(msg.data) }) });
  const decoder = new TextDecoder();
  for await (const chunk of response.body) parser.feed(decoder.decode(chunk, { stream: true }));
} catch {
  dropped = true; // the server cut the stream (or the request failed): what arrived is in `events`
}
parentPort.postMessage({ status, events, dropped });
