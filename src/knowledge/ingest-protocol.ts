/**
 * The messages between the ingestion pool (src/knowledge/ingestion-pool.ts) and its parser processes
 * (src/knowledge/ingest.process.ts), over the processes' IPC channel (structured clone:
 * `serialization: 'advanced'`). The pool sends a task's {@link PartMessage}s (large uploads only), then
 * its {@link TaskMessage}; a process answers {@link ReadyMessage} once (after its warm-up, when it takes
 * tasks), then for each task zero or more {@link ChunksMessage} and one {@link ResultMessage}.
 */
import type { ChunkDraft, IngestResult, IngestTask } from './types.js';

/**
 * One document to parse; `memoryMb` only names the memory limit in a failure's message. With `parts`,
 * the content is the {@link PartMessage}s of this id sent before it, joined (the task's own `content` is
 * then an empty array).
 */
export interface TaskMessage {
  type: 'task';
  id: number;
  task: IngestTask & { memoryMb?: number };
  parts?: boolean;
}

/**
 * A slice of a large upload, sent ahead of its task: the pool serializes one slice per event-loop turn
 * instead of a whole upload at once (src/knowledge/ingestion-pool.ts, {@link CONTENT_PART_BYTES}).
 */
export interface PartMessage {
  type: 'part';
  id: number;
  bytes: Uint8Array;
}

/** Size of a {@link PartMessage}, bytes: serializing 1 MiB takes the pool's event loop about 1 ms. */
export const CONTENT_PART_BYTES = 1024 * 1024;

/** The process takes tasks; `rounds` of warm-up took `ms`. */
export interface ReadyMessage {
  type: 'ready';
  rounds: number;
  ms: number;
}

/**
 * Chunks of task `id`, in order, sent ahead of its result in batches of {@link CHUNKS_PER_MESSAGE}, so
 * the pool's event loop decodes a large document's chunks a batch per turn instead of in one long task.
 */
export interface ChunksMessage {
  type: 'chunks';
  id: number;
  chunks: ChunkDraft[];
}

/** The outcome of task `id`; on success `chunks` is empty: they came in the {@link ChunksMessage}s before it. */
export interface ResultMessage {
  type: 'result';
  id: number;
  result: IngestResult;
}

/** Chunks per {@link ChunksMessage}: at most about 1 MB of text (chunks are at most 2,000 characters). */
export const CHUNKS_PER_MESSAGE = 512;
