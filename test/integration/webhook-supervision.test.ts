/**
 * Webhook endpoint actors are supervised (issue 36; DESIGN.md "Actors"): an actor that throws is logged
 * and started again from the store after a backoff; the process does not crash (an uncaught exception
 * would fail this run), the other endpoints go on, and the crashed endpoint's deliveries still go out.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookEndpointMachine } from '../../actors/webhook-endpoint/webhook-endpoint.machine.js';
import { Outbox } from '../../src/events/outbox.js';
import { createLogger } from '../../src/log/logger.js';
import { WebhookDispatcher } from '../../src/runtime/webhooks/dispatcher.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/ports.js';
import { WebhookSender } from '../../src/webhooks/sender.js';
import { waitFor } from '../helpers/sse-client.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

let dir: string;
let store: Store;
let receiver: Receiver;
let dispatcher: WebhookDispatcher;
const lines: string[] = [];
let crashes = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-webhook-supervision-'));
  store = createSqliteStore(dir, { writer: 'main', reader: 'main' });
  receiver = await startReceiver();
  const now = new Date().toISOString();
  for (const id of ['whe_crashy', 'whe_calm']) {
    await store.webhooks.createEndpoint({
      id, org_id: 'org_1', url: `${receiver.url}/${id}`, description: null, events: ['*'], enabled: true, disabled_reason: null,
      secret: `whsec_${id}`, previous_secret: null, previous_secret_expires_at: null, failing_since: null, created_at: now, updated_at: now,
    });
  }
  // The crashy endpoint's actor throws on its first finished attempt (a bug in the machine's action).
  const faulty = webhookEndpointMachine.provide({
    actions: {
      record: ({ context }) => {
        if (context.endpointId === 'whe_crashy' && crashes < 1) { crashes++; throw new Error('boom in the endpoint actor'); }
      },
    },
  });
  const outbox = new Outbox();
  dispatcher = new WebhookDispatcher({
    store, outbox, logger: createLogger('debug', { write: (l: string) => { lines.push(l); } }),
    sender: new WebhookSender({ allowPrivate: true, timeoutMs: 2000 }), retryScheduleMs: [0, 100, 100], maxInFlight: 1,
    disableAfterMs: 86_400_000, leaseMs: 3000, sweepIntervalMs: 60_000, userAgent: 'Parley/test', endpointLogic: faulty,
  });
  await dispatcher.start();
});

afterAll(async () => {
  await dispatcher?.close();
  await store?.close();
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('webhook endpoint actors under supervision', () => {
  it('a crashing actor is restarted from the store; its deliveries and the other endpoint\'s still go out, once each', async () => {
    const at = new Date().toISOString();
    const events = ['evt_1', 'evt_2', 'evt_3'].map((id) => ({ id, type: 'message.created', org_id: 'org_1', created_at: at, data: { n: id } }));
    await store.webhooks.recordEvents(events);
    dispatcher.wakeOrg('org_1');
    await waitFor(() => {
      const got = (id: string) => new Set(receiver.got.filter((g) => g.path === `/${id}`).map((g) => g.json.id));
      return got('whe_crashy').size === 3 && got('whe_calm').size === 3 ? true : undefined;
    }, 15_000, 'every event at both endpoints');
    expect(crashes).toBe(1);
    const crashLogs = lines.map((l) => JSON.parse(l) as { msg: string; endpoint_id?: string }).filter((l) => l.msg.startsWith('webhook endpoint actor crashed'));
    expect(crashLogs.map((l) => l.endpoint_id)).toEqual(['whe_crashy']);
    // Started again from the store: it has an actor, and a new event reaches the endpoint through it.
    await waitFor(() => (dispatcher.stateOf('whe_crashy') !== undefined ? true : undefined), 5_000, 'the actor restarted');
    await store.webhooks.recordEvents([{ id: 'evt_4', type: 'message.created', org_id: 'org_1', created_at: at, data: { n: 'evt_4' } }]);
    dispatcher.wakeOrg('org_1');
    await waitFor(() => (receiver.got.some((g) => g.path === '/whe_crashy' && g.json.id === 'evt_4') ? true : undefined), 5_000, 'evt_4 through the restarted actor');
    expect(receiver.got.filter((g) => g.path === '/whe_crashy').map((g) => g.json.id).sort()).toEqual(['evt_1', 'evt_2', 'evt_3', 'evt_4']);
    // The calm endpoint never lost its actor.
    expect(receiver.got.filter((g) => g.path === '/whe_calm').map((g) => g.json.id).sort()).toEqual(['evt_1', 'evt_2', 'evt_3', 'evt_4']);
  });
});
