import { z } from 'zod';
import type { ModelToolSpec, Passage } from '../models/port.js';
import type { KnowledgeSearch } from '../knowledge/hybrid-search.js';

/** Name of the knowledge search tool. */
export const SEARCH_KNOWLEDGE = 'search_knowledge';

/** The tool as offered to models (OpenAI function-tool JSON Schema). */
export const searchKnowledgeSpec: ModelToolSpec = {
  name: SEARCH_KNOWLEDGE,
  description: "Search the agent's knowledge base. Returns the most relevant passages with their numbers for citation.",
  parameters: {
    type: 'object',
    properties: {
      query: { type: 'string', description: 'What to look for, in a few words.' },
      k: { type: 'integer', minimum: 1, maximum: 10, description: 'How many passages (default 4).' },
    },
    required: ['query'],
    additionalProperties: false,
  },
};

const Args = z.object({ query: z.string().min(1).max(2000), k: z.number().int().min(1).max(10).optional() }).strict();

/** Result of a tool run: `output` is JSON-serializable and goes to the model and the client. */
export interface ToolOutcome {
  output: unknown;
  is_error: boolean;
  passages: Passage[];
}

/**
 * Runs `search_knowledge` with the model's raw JSON `args` over the agent's knowledge bases, through
 * `search` (the store's bm25, or the hybrid search of src/knowledge/hybrid-search.ts). Bad
 * arguments are a tool error the model can read (`is_error: true`), never a thrown error.
 */
export async function runSearchKnowledge(
  search: KnowledgeSearch, orgId: string, kbIds: string[], rawArgs: string,
): Promise<ToolOutcome> {
  let parsed: unknown;
  try { parsed = JSON.parse(rawArgs || '{}'); } catch {
    return { output: { error: 'arguments are not valid JSON' }, is_error: true, passages: [] };
  }
  const args = Args.safeParse(parsed);
  if (!args.success) {
    return { output: { error: `invalid arguments: ${args.error.issues.map((i) => i.message).join('; ')}` }, is_error: true, passages: [] };
  }
  const passages = await search(orgId, kbIds, args.data.query, args.data.k ?? 4);
  return {
    output: {
      results: passages.map((p) => ({ document_id: p.document_id, chunk_id: p.chunk_id, title: p.title, heading: p.heading, text: p.text })),
    },
    is_error: false,
    passages,
  };
}
