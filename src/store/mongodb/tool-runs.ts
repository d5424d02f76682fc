import type { ToolRunsPort } from '../ports.js';
import type { ToolRunRecord } from '../records.js';
import type { MongoContext } from './context.js';
import { checkFence } from './leases.js';
import { writeOutbox } from './outbox.js';
import type { ToolRunDoc } from './schema.js';

const fromDoc = (d: ToolRunDoc): ToolRunRecord => {
  const { _id, ...rest } = d;
  return { id: _id, ...rest, http_status: d.http_status ?? null, error: d.error ?? null };
};

/**
 * ToolRunsPort on MongoDB (collection `tool_runs`). A run, its fence check and its outbox events are one
 * transaction; a duplicate id fails the insert and stores neither. Queued behind the conversation's other
 * writes of this process (MongoContext.queue), so a run of a new conversation's first turn lands after the
 * conversation and its lease, as on SQLite.
 */
export function createToolRuns({ c, tx, queue }: MongoContext): ToolRunsPort {
  return {
    async record(run, events, fence) {
      await queue.run(run.conversation_id, () => tx(async (session) => {
        if (fence !== undefined) await checkFence(c, session, run.conversation_id, fence);
        const { id, ...rest } = run;
        await c.tool_runs.insertOne({ _id: id, ...rest }, { session });
        await writeOutbox(c, session, events);
      }));
    },
    async listForConversation(orgId, conversationId, limit = 100) {
      const docs = await c.tool_runs.find({ org_id: orgId, conversation_id: conversationId }).sort({ created_at: 1, _id: 1 }).limit(limit).toArray();
      return docs.map(fromDoc);
    },
  };
}
