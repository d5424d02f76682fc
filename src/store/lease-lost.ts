/**
 * The error of a fenced write (ConversationsPort, ToolRunsPort) whose fence no longer holds the
 * conversation's lease: another process took the conversation over, or the lease was released or expired
 * (DESIGN.md "Several processes"). Every adapter throws this one class; callers test `code === 'lease_lost'`
 * (src/errors/app-error.ts toAppError maps it to `interrupted`).
 */
export class LeaseLost extends Error {
  readonly code = 'lease_lost';

  constructor(conversationId: string) {
    super(`the lease of conversation ${conversationId} is no longer held by this writer (taken over, released or expired)`);
    this.name = 'LeaseLost';
  }
}
