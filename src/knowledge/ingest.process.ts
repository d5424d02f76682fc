/**
 * The parser process of the ingestion pool (src/knowledge/ingestion-pool.ts starts it, compiled:
 * `dist/src/knowledge/ingest.process.js`, with an IPC channel): parses one document at a time with the
 * ingestion function (src/knowledge/ingest.worker.ts) and sends the chunks back. The pool starts it under
 * an operating-system memory limit and a lower CPU priority, and kills it past a document's time limit.
 *
 * argv[2]: warm-up rounds (src/knowledge/warm-up.ts), 0 for none.
 *
 * Messages: src/knowledge/ingest-protocol.ts. It exits when the pool disconnects.
 */
import { CHUNKS_PER_MESSAGE, type ChunksMessage, type PartMessage, type ReadyMessage, type ResultMessage, type TaskMessage } from './ingest-protocol.js';
import ingest, { warmUp } from './ingest.worker.js';

/** Whether `m` is a {@link TaskMessage} (the task itself is checked by ingest()). */
function isTask(m: unknown): m is TaskMessage {
  const t = m as Partial<TaskMessage> | null;
  return typeof t === 'object' && t !== null && t.type === 'task' && Number.isInteger(t.id) && typeof t.task === 'object' && t.task !== null;
}

/** Whether `m` is a {@link PartMessage}. */
function isPart(m: unknown): m is PartMessage {
  const t = m as Partial<PartMessage> | null;
  return typeof t === 'object' && t !== null && t.type === 'part' && Number.isInteger(t.id) && t.bytes instanceof Uint8Array;
}

/** Slices received per task id, until its task message comes. */
const parts = new Map<number, Uint8Array[]>();

const send = process.send?.bind(process);
if (send === undefined) throw new Error('ingest.process runs as a child process with an IPC channel (see src/knowledge/ingestion-pool.ts)');

process.on('disconnect', () => process.exit(0));

const rounds = Math.max(0, Math.trunc(Number(process.argv[2] ?? 0)) || 0);
const ms = rounds > 0 ? await warmUp(rounds) : 0;

let queue = Promise.resolve();
process.on('message', (message: unknown) => {
  if (isPart(message)) {
    const list = parts.get(message.id) ?? [];
    list.push(message.bytes);
    parts.set(message.id, list);
    return;
  }
  if (!isTask(message)) return;
  if (message.parts === true) {
    const list = parts.get(message.id) ?? [];
    parts.delete(message.id);
    const joined = list.length === 1 ? list[0]! : Buffer.concat(list);
    // A plain Uint8Array view: pdf.js refuses a Buffer.
    message.task.content = new Uint8Array(joined.buffer, joined.byteOffset, joined.byteLength);
  }
  // One task at a time: the pool sends one, but a second would wait here rather than interleave.
  queue = queue.then(async () => {
    const result = await ingest(message.task);
    if (result.ok) {
      for (let i = 0; i < result.chunks.length; i += CHUNKS_PER_MESSAGE) {
        const chunks: ChunksMessage = { type: 'chunks', id: message.id, chunks: result.chunks.slice(i, i + CHUNKS_PER_MESSAGE) };
        send(chunks);
      }
      const done: ResultMessage = { type: 'result', id: message.id, result: { ok: true, chunks: [], characters: result.characters } };
      send(done);
    } else {
      const done: ResultMessage = { type: 'result', id: message.id, result };
      send(done);
    }
  }).catch(() => {
    // An answer that cannot be sent (the channel closed): nothing more to do here; the pool sees the exit.
    process.exit(1);
  });
});

const ready: ReadyMessage = { type: 'ready', rounds, ms };
send(ready);
