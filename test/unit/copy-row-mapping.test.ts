/**
 * `store copy`'s mapping between SQLite rows and MongoDB documents (src/store/copy/row-mapping.ts): the key
 * as `_id`, JSON text as native values, 0/1 as booleans, bytes as BinData (an embedding as a float32
 * vector), MongoDB's own fields computed and dropped again; a row survives the way there and back.
 */
import { Binary } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { documentToRow, idOf, rowToDocument } from '../../src/store/copy/row-mapping.js';
import { COPIED_TABLES, type CopiedTable } from '../../src/store/copy/tables.js';

const table = (name: string): CopiedTable => COPIED_TABLES.find((t) => t.name === name)!;

describe('store copy row mapping', () => {
  it('copies every table of the data, parents first, and none of the processes\' state', () => {
    const names = COPIED_TABLES.map((t) => t.name);
    expect(names).not.toEqual(expect.arrayContaining(['feed']));
    for (const skipped of ['feed', 'processes', 'cluster_secret', 'conversation_leases', 'chunks_fts']) expect(names).not.toContain(skipped);
    const before = (a: string, b: string) => expect(names.indexOf(a), `${a} before ${b}`).toBeLessThan(names.indexOf(b));
    before('organizations', 'memberships'); before('users', 'memberships'); before('refresh_families', 'refresh_tokens');
    before('documents', 'document_sources'); before('documents', 'chunks'); before('conversations', 'messages');
    before('webhook_endpoints', 'webhook_deliveries'); before('webhook_events', 'webhook_deliveries'); before('webhook_deliveries', 'webhook_attempts');
  });

  it('an agent: the key as _id, JSON as values, 0/1 as a boolean; and back', () => {
    const row = {
      id: 'agt_1', org_id: 'o', name: 'A', description: '', instructions: 'i', model_provider: 'builtin', model_name: 'extractive',
      knowledge_base_ids: '["kb_1"]', tools: '[]', safety: '{"redact_pii":true}', published: 1, public_key: 'pk_1', allowed_origins: '["*"]',
      created_at: 'c', updated_at: 'u',
    };
    const doc = rowToDocument(table('agents'), row);
    expect(doc).toEqual({
      _id: 'agt_1', org_id: 'o', name: 'A', description: '', instructions: 'i', model_provider: 'builtin', model_name: 'extractive',
      knowledge_base_ids: ['kb_1'], tools: [], safety: { redact_pii: true }, published: true, public_key: 'pk_1', allowed_origins: ['*'],
      created_at: 'c', updated_at: 'u',
    });
    expect(documentToRow(table('agents'), doc)).toEqual(row);
    expect(rowToDocument(table('agents'), { ...row, published: 0 }).published).toBe(false);
    // A field a row or a document lacks is left out (the insert stores NULL), not written as undefined.
    expect(rowToDocument(table('agents'), { ...row, description: undefined })).not.toHaveProperty('description');
    expect(documentToRow(table('agents'), { ...doc, description: undefined })).not.toHaveProperty('description');
  });

  it('a key of several columns joins them into _id and keeps them as fields', () => {
    const row = { org_id: 'o', metric: 'total_tokens', value: 100, period: 'month', period_start: '2025-01-01', event_id: 'evt_1', fired_at: 'f' };
    const doc = rowToDocument(table('usage_threshold_marks'), row);
    expect(doc._id).toBe('o/total_tokens/100/month/2025-01-01');
    expect(documentToRow(table('usage_threshold_marks'), doc)).toEqual(row);
    expect(idOf(table('memberships'), { org_id: 'o', user_id: 'u' })).toBe('o/u');
    expect(idOf(table('webhook_attempts'), { delivery_id: 'dlv_1', number: 2 })).toBe('dlv_1/2');
  });

  it('MongoDB\'s own fields: TTL dates, the active key, and fields the copy corrects at its end; dropped on the way back', () => {
    const fam = { id: 'fam_1', user_id: 'u', created_at: 'c', absolute_expires_at: '2025-02-01T00:00:00.000Z', revoked_at: null, revoked_reason: null };
    const famDoc = rowToDocument(table('refresh_families'), fam);
    expect(famDoc.expire_at).toEqual(new Date('2025-02-01T00:00:00.000Z'));
    expect(documentToRow(table('refresh_families'), famDoc)).toEqual(fam);
    const active = rowToDocument(table('signing_keys'), { kid: 'k1', algorithm: 'EdDSA', public_jwk: '{"x":"1"}', private_jwk: '{"d":"2"}', created_at: 'c', retired_at: null });
    expect(active).toMatchObject({ _id: 'k1', active: true, public_jwk: { x: '1' } });
    expect(rowToDocument(table('signing_keys'), { kid: 'k0', algorithm: 'EdDSA', public_jwk: '{}', private_jwk: '{}', created_at: 'c', retired_at: 'r' })).not.toHaveProperty('active');
    expect(documentToRow(table('signing_keys'), active)).not.toHaveProperty('active');
    const conv = rowToDocument(table('conversations'), { id: 'conv_1', org_id: 'o', agent_id: 'a', status: 'active', metadata: '{"source":"x"}', visitor_token_hash: null, created_at: 'c', updated_at: 'u' });
    expect(conv).toMatchObject({ message_seq: 0, metadata: { source: 'x' } });
    expect(documentToRow(table('conversations'), { ...conv, message_seq: 9 })).not.toHaveProperty('message_seq');
    const ticket = rowToDocument(table('socket_tickets'), { ticket_hash: 'h', user_id: 'u', org_id: 'o', session_id: null, created_at: 'c', expires_at: '2025-01-01T00:01:00.000Z', used_at: null });
    expect(ticket).toMatchObject({ _id: 'h', expire_at: new Date('2025-01-01T00:01:00.000Z') });
    const token = rowToDocument(table('refresh_tokens'), { token_hash: 'rt', family_id: 'fam_1', created_at: 'c', expires_at: '2025-01-02T00:00:00.000Z', used_at: null });
    expect(token).toEqual({ _id: 'rt', family_id: 'fam_1', created_at: 'c', expires_at: '2025-01-02T00:00:00.000Z', used_at: null, expire_at: new Date('2025-01-02T00:00:00.000Z') });
    expect(documentToRow(table('refresh_tokens'), token)).toEqual({ token_hash: 'rt', family_id: 'fam_1', created_at: 'c', expires_at: '2025-01-02T00:00:00.000Z', used_at: null });
  });

  it('a chunk: rowid dropped, its length in tokens, not ready until the copy marks it, its embedding as a float32 vector and back', () => {
    const vector = new Float32Array([0.5, -1.25, 3]);
    const row = {
      rowid: 17, id: 'chk_1', doc_id: 'doc_1', kb_id: 'kb_1', org_id: 'o', ord: 0, title: 'Guide', heading: 'Intro', body: 'Streams of data.',
      page: null, embedding_model: 'm', embedding: new Uint8Array(vector.buffer),
    };
    const doc = rowToDocument(table('chunks'), row);
    expect(doc).toMatchObject({ _id: 'chk_1', ready: false, dl: 5, page: null, embedding_model: 'm' });
    expect(doc).not.toHaveProperty('rowid');
    expect(Array.from((doc.embedding as Binary).toFloat32Array())).toEqual([0.5, -1.25, 3]);
    const back = documentToRow(table('chunks'), { ...doc, ready: true });
    expect(Array.from(new Float32Array(new Uint8Array(back.embedding as Uint8Array).buffer))).toEqual([0.5, -1.25, 3]);
    const { rowid: _rowid, embedding: _e, ...rest } = row;
    expect({ ...back, embedding: undefined }).toEqual({ ...rest, embedding: undefined });
    expect(rowToDocument(table('chunks'), { ...row, embedding: null, embedding_model: null }).embedding).toBeNull();
  });

  it('an upload: text stays a string, bytes become BinData and come back as the same bytes', () => {
    const text = rowToDocument(table('document_sources'), { doc_id: 'doc_1', content: 'héllo', is_text: 1 });
    expect(text).toEqual({ _id: 'doc_1', content: 'héllo', is_text: true });
    const bytes = rowToDocument(table('document_sources'), { doc_id: 'doc_2', content: new Uint8Array([0, 255, 7]), is_text: 0 });
    expect(bytes.content).toBeInstanceOf(Binary);
    expect(Array.from(documentToRow(table('document_sources'), bytes).content as Uint8Array)).toEqual([0, 255, 7]);
    expect(documentToRow(table('document_sources'), text)).toEqual({ doc_id: 'doc_1', content: 'héllo', is_text: 1 });
  });

  it('a message keeps its number (unique in its conversation either way); null JSON stays null', () => {
    const row = {
      seq: 42, id: 'msg_1', conversation_id: 'c', org_id: 'o', turn_id: null, role: 'agent', content: 'x', citations: '[]', tool_runs: '[]',
      usage: null, status: 'completed', finish_reason: 'stop', error: null, created_at: 'c',
    };
    const doc = rowToDocument(table('messages'), row);
    expect(doc).toMatchObject({ _id: 'msg_1', seq: 42, usage: null, error: null, citations: [] });
    expect(documentToRow(table('messages'), doc)).toEqual(row);
  });
});
