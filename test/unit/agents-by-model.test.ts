/**
 * Which agent a `model` of the OpenAI-compatible endpoints names (API.md "OpenAI-compatible"):
 * AgentService.byModel and listAll, through the agent cache (AgentDirectory.byName) and without it, on a
 * real SQLite store in a temp dir (main-thread writer and reader: no worker threads).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/app-error.js';
import type { ModelRegistry } from '../../src/models/registry.js';
import { AgentDirectory } from '../../src/runtime/agent-directory.js';
import { AgentService } from '../../src/runtime/services/agents.js';
import type { Store } from '../../src/store/ports.js';
import type { AgentRecord } from '../../src/store/records.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const ORG = 'org_A';
/** byModel never looks at model providers: nothing of the registry is used. */
const NO_MODELS = {} as ModelRegistry;

function agent(id: string, name: string, createdAt: string, org = ORG): AgentRecord {
  return {
    id, org_id: org, name, description: '', instructions: '', model: { provider: 'builtin', name: 'builtin' }, knowledge_base_ids: [], tools: [],
    safety: { blocked_phrases: [], redact_pii: false, blocked_message: 'no' }, published: false, public_key: null, allowed_origins: ['*'],
    created_at: createdAt, updated_at: createdAt,
  };
}

const A1 = 'agt_01JD5Q8W4M0000R7K2XB9TQH3N';
const A2 = 'agt_01JD5Q8W4M0000R7K2XB9TQH3P';
const A3 = 'agt_01JD5Q8W4M0000R7K2XB9TQH3Q';

async function refusal(p: Promise<unknown>): Promise<string> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).status).toBe(404);
  return (err as AppError).code;
}

describe('AgentService.byModel and listAll', () => {
  let dir: string;
  let store: Store & { close(): Promise<void> };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-by-model-'));
    store = createSqliteStore(dir, { writer: 'main', reader: 'main' });
    await store.agents.create(agent(A1, 'Support', '2025-01-01T00:00:01.000Z'));
    await store.agents.create(agent(A2, 'Support', '2025-01-01T00:00:02.000Z'));
    await store.agents.create(agent(A3, A1, '2025-01-01T00:00:03.000Z')); // named like another agent's id
    await store.agents.create(agent('agt_01JD5Q8W4M0000R7K2XB9TQH3Z', 'Elsewhere', '2025-01-01T00:00:04.000Z', 'org_B'));
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const cached of [true, false]) {
    describe(cached ? 'through the agent cache' : 'without a cache', () => {
      const service = () => new AgentService(store, NO_MODELS, cached ? new AgentDirectory(store) : undefined);

      it('finds an agent by id first, then by exact name (the oldest of several)', async () => {
        const s = service();
        expect((await s.byModel(ORG, A2)).id).toBe(A2);
        expect((await s.byModel(ORG, 'Support')).id).toBe(A1);
        expect((await s.byModel(ORG, A1)).id).toBe(A1); // an id wins over an agent named like it
        // An id-shaped model that is no agent's id is still looked up as a name.
        await store.agents.create(agent('agt_01JD5Q8W4M0000R7K2XB9TQH3R', 'agt_01JD5Q8W4M0000R7K2XB9TQH3S', '2025-01-01T00:00:05.000Z'));
        expect((await s.byModel(ORG, 'agt_01JD5Q8W4M0000R7K2XB9TQH3S')).id).toBe('agt_01JD5Q8W4M0000R7K2XB9TQH3R');
        expect((await s.byModel(ORG, 'agt_01JD5Q8W4M0000R7K2XB9TQH3S')).id).toBe('agt_01JD5Q8W4M0000R7K2XB9TQH3R');
      });

      it('is model_not_found for another organization\'s agent, a near name or an unknown id', async () => {
        const s = service();
        expect(await refusal(s.byModel(ORG, 'agt_01JD5Q8W4M0000R7K2XB9TQH3Z'))).toBe('model_not_found');
        expect(await refusal(s.byModel(ORG, 'Elsewhere'))).toBe('model_not_found');
        expect(await refusal(s.byModel(ORG, 'support'))).toBe('model_not_found');
        await expect(s.byModel(ORG, 'support')).rejects.toThrow('The model "support" does not exist: name one of your agents by id (agt_...) or by its exact name (GET /v1/models lists them).');
        expect(await refusal(s.byModel(ORG, 'agt_01JD5Q8W4M0000R7K2XB9TQH3Y'))).toBe('model_not_found');
        expect(await refusal(s.byModel('org_B', A1))).toBe('model_not_found');
      });

      it('lists every agent of the organization, newest first, past one page', async () => {
        for (let i = 0; i < 120; i++) await store.agents.create(agent(`agt_01JD5Q8W4M0001${String(i).padStart(3, '0')}00000000000`.slice(0, 30), `Bulk ${i}`, '2025-01-02T00:00:00.000Z'));
        const all = await service().listAll(ORG);
        expect(all).toHaveLength(123);
        expect(all.map((a) => a.id)).toEqual([...all.map((a) => a.id)].sort().reverse());
        expect(all.some((a) => a.org_id !== ORG)).toBe(false);
      });
    });
  }

  it('the cache answers a name again without the store, and forgets every name when an agent changes', async () => {
    const directory = new AgentDirectory(store);
    const s = new AgentService(store, NO_MODELS, directory);
    expect((await s.byModel(ORG, 'Support')).id).toBe(A1);
    expect(directory.byName(ORG, 'Support')).toMatchObject({ id: A1 }); // synchronously: cached
    // A rename elsewhere (straight in the store): the cache still answers until this instance invalidates.
    await store.agents.update(ORG, A1, { name: 'Renamed' }, '2025-01-03T00:00:00.000Z');
    expect((await s.byModel(ORG, 'Support')).id).toBe(A1);
    directory.invalidate(ORG, A1);
    expect((await s.byModel(ORG, 'Support')).id).toBe(A2);
    // A miss is not remembered: an agent created later under that name is found.
    expect(await refusal(s.byModel(ORG, 'Newcomer'))).toBe('model_not_found');
    await store.agents.create(agent('agt_01JD5Q8W4M0000R7K2XB9TQH3V', 'Newcomer', '2025-01-04T00:00:00.000Z'));
    expect((await s.byModel(ORG, 'Newcomer')).id).toBe('agt_01JD5Q8W4M0000R7K2XB9TQH3V');
  });

  it('the cache entry of a name expires after its time to live', async () => {
    const directory = new AgentDirectory(store, 0);
    expect(await directory.byName(ORG, 'Support')).toMatchObject({ id: A1 });
    expect(directory.byName(ORG, 'Support')).toBeInstanceOf(Promise);
  });
});
