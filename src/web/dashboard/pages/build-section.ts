/**
 * The pages that build agents, one file of the build (loaded when the first of them is opened): the agent
 * list, an agent's editor with its playground, the widget preview, the knowledge bases and one knowledge
 * base. One file rather than five: each file is gzipped on its own, and the dashboard's 60 KiB budget
 * (scripts/build-web.mjs) counts the bytes of them all.
 */
export { AgentsPage } from './agents.js';
export { AgentEditorPage } from './agent-editor.js';
export { PreviewPage } from './preview.js';
export { KnowledgePage } from './knowledge.js';
export { KnowledgeBasePage } from './knowledge-base.js';
