import { EventEmitter } from 'node:events';

/**
 * Domain event names: those of SPEC.md 6.2 (the webhook catalogue), and `handoff.accepted` (a person
 * took the conversation over: `pending_handoff | active -> handed_off`), which is in-process only: it is
 * not in the catalogue, so webhooks must not offer it until the catalogue names it.
 */
export type DomainEventType =
  | 'message.created' | 'conversation.created' | 'conversation.closed' | 'handoff.requested'
  | 'handoff.resolved' | 'document.ready' | 'document.failed' | 'tool.run' | 'usage.threshold'
  | 'handoff.accepted' | 'conversation.deleted';

/** A domain event: what happened, to which organization, with a JSON-serializable `data` object. */
export interface DomainEvent {
  type: DomainEventType;
  org_id: string;
  data: Record<string, unknown>;
}

/**
 * The in-process domain event bus (DESIGN.md step 5). Publishing never throws into the publisher: a
 * listener that throws is reported through `onListenerError` and the others still run.
 */
export class EventBus {
  private readonly emitter = new EventEmitter();
  constructor(private readonly onListenerError: (err: unknown, event: DomainEvent) => void) {
    this.emitter.setMaxListeners(0);
  }

  publish(event: DomainEvent): void {
    for (const listener of this.emitter.listeners('event') as Array<(e: DomainEvent) => void>) {
      try { listener(event); } catch (err) { this.onListenerError(err, event); }
    }
  }

  /** Adds a listener for every event; returns the function that removes it. */
  subscribe(listener: (event: DomainEvent) => void): () => void {
    this.emitter.on('event', listener);
    return () => { this.emitter.off('event', listener); };
  }
}
