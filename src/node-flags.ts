/**
 * The V8 flags the server process starts with (`npm start` runs `node <SERVER_NODE_FLAGS> dist/src/main.js`).
 * They can only be given on node's command line: `node` refuses them in NODE_OPTIONS, and setting them
 * with `v8.setFlagsFromString` once the heap is running aborts the process (tried on Node 20.20:
 * `--single-threaded-gc` or `--no-parallel-marking` set at run time fail a V8 check at the next full
 * collection).
 *
 * `--single-threaded-gc`: the main thread (and each worker thread) collects its own heap, with no
 * concurrent marking and no parallel helper threads. On a 2-core host the helpers compete for the cores
 * with the event loop, the writer thread, the upstream and the clients; a scavenge then waits for helpers
 * the kernel has not scheduled yet. Measured here (2026-11-27, 2x AMD EPYC, 2 cores), 100 short turns a
 * second (16 tokens, model first token after 20 ms), 10 s windows, seven alternating pairs: time to first
 * token p99 31.1-35.5 ms with the flag against 34.5-43.0 ms without (the model alone: about 25 ms), max
 * 38-46 against 46-71 ms; at 79 long streams a second (C=100) and at one stream no difference clear of the
 * noise, and the same server CPU per stream.
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--single-threaded-gc'];

/**
 * The flags of {@link SERVER_NODE_FLAGS} missing from `execArgv` (node's own arguments,
 * `process.execArgv`), in the order listed there; empty when the process started with all of them.
 */
export function missingNodeFlags(execArgv: readonly string[]): string[] {
  return SERVER_NODE_FLAGS.filter((flag) => !execArgv.includes(flag));
}
