import { randomBytes } from 'node:crypto';
import { link, mkdir, readdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateApiKey, hashApiKey } from '../auth/api-keys.js';
import { newId } from '../ids/ids.js';
import type { KnowledgeService } from '../knowledge/knowledge-service.js';
import type { Logger } from '../log/logger.js';
import { DEFAULT_SAFETY } from '../moderation/safety-check.js';
import type { DirectoryService } from '../runtime/services/directory.js';
import type { Store } from '../store/ports.js';

/**
 * What the first start created; `api_key` and `owner_password` exist only here and in the 0600
 * credentials file (the store keeps hashes).
 */
export interface InitialCredentials {
  organization_id: string;
  agent_id: string;
  knowledge_base_id: string;
  api_key_id: string;
  api_key: string;
  /** The demo organization's owner, who signs in to the dashboard with this e-mail and password. */
  owner_email: string;
  owner_password: string;
  created_at: string;
}

/** E-mail of the demo owner (example.com is reserved for examples, RFC 2606). */
export const DEMO_OWNER_EMAIL = 'owner@example.com';

/** Name of the credentials file in the data directory. */
export const CREDENTIALS_FILE = 'initial-credentials.json';

/**
 * First-run bootstrap of an empty store, the way self-hosted services do it: a demo organization, a
 * knowledge base filled with every `*.md` of `docsDir` (through the ingestion pool), the demo agent
 * "Parley Guide", one API key, and the organization's owner ({@link DEMO_OWNER_EMAIL} with a random
 * 20-character password, about 120 bits), written to `<dataDir>/initial-credentials.json` with mode 0600.
 * Returns undefined (and does nothing) when the store already has an organization.
 */
export async function bootstrapIfEmpty(deps: {
  store: Store; knowledge: KnowledgeService; directory: DirectoryService; logger: Logger; dataDir: string; docsDir: string;
}): Promise<InitialCredentials | undefined> {
  const { store, knowledge, logger } = deps;
  if ((await store.organizations.count()) > 0) return undefined;
  const now = new Date().toISOString();
  const orgId = newId('org');
  await store.organizations.create({ id: orgId, name: 'Demo organization', created_at: now });
  const kb = { id: newId('kb'), org_id: orgId, name: 'Parley documentation', created_at: now };
  await store.knowledge.createBase(kb);

  let files: string[] = [];
  try {
    files = (await readdir(deps.docsDir)).filter((f) => f.endsWith('.md')).sort();
  } catch {
    logger.warn({ docs_dir: deps.docsDir }, 'docs folder not found: the demo knowledge base starts empty');
  }
  for (const file of files) {
    const content = await readFile(join(deps.docsDir, file));
    const title = file.replace(/\.md$/, '').replace(/[-_]+/g, ' ').replace(/^\w/, (c) => c.toUpperCase());
    // The server's own first-run import: not bounded by PARLEY_INGEST_MAX_PROCESSING_PER_ORG (a docs folder may hold more).
    await knowledge.upload(kb, { title, contentType: 'text/markdown', content: new Uint8Array(content) }, { bounded: false });
  }

  const agentId = newId('agt');
  await store.agents.create({
    id: agentId, org_id: orgId, name: 'Parley Guide', description: 'Answers questions about Parley from its documentation.',
    instructions: 'You are Parley Guide. Answer questions about the Parley service using only the documentation passages you are given, and cite them by number.',
    model: { provider: 'builtin', name: 'builtin' }, knowledge_base_ids: [kb.id], tools: ['search_knowledge'],
    safety: { ...DEFAULT_SAFETY, blocked_phrases: [] }, published: false, public_key: null, allowed_origins: ['*'], created_at: now, updated_at: now,
  });

  const apiKey = generateApiKey();
  const keyId = newId('key');
  await store.apiKeys.create({ id: keyId, org_id: orgId, name: 'Initial key', key_hash: hashApiKey(apiKey), last4: apiKey.slice(-4), created_at: now, revoked_at: null, expires_at: null });

  const ownerPassword = randomBytes(15).toString('base64url');
  const owner = await deps.directory.createUser(DEMO_OWNER_EMAIL, ownerPassword);
  await store.memberships.add({ org_id: orgId, user_id: owner.id, role: 'owner', created_at: now });

  const creds: InitialCredentials = {
    organization_id: orgId, agent_id: agentId, knowledge_base_id: kb.id, api_key_id: keyId, api_key: apiKey,
    owner_email: owner.email, owner_password: ownerPassword, created_at: now,
  };
  await mkdir(deps.dataDir, { recursive: true, mode: 0o700 });
  // Written whole under a temporary name, then linked into place: a reader never sees half a file, and
  // an existing credentials file is never overwritten (link fails with EEXIST).
  const tmp = join(deps.dataDir, `.${CREDENTIALS_FILE}.${process.pid}.tmp`);
  await writeFile(tmp, `${JSON.stringify(creds, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  try {
    await link(tmp, join(deps.dataDir, CREDENTIALS_FILE));
  } finally {
    await unlink(tmp);
  }
  await knowledge.settled();
  logger.info({ organization_id: orgId, agent_id: agentId, documents: files.length }, 'first start: demo organization created');
  return creds;
}
