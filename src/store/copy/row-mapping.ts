/**
 * A copied SQLite row as a MongoDB document and back (the two stores keep the same fields: see
 * src/store/mongodb/schema.ts). Pure functions; `parley store copy` uses them between the two kinds of store.
 */
import { Binary, type Document } from 'mongodb';
import { chunkLength } from '../mongodb/bm25.js';
import { bytesToVector, vectorToBytes } from '../vectors.js';
import type { CopiedTable, CopyRow } from './tables.js';

/** Fields a MongoDB document has and its SQLite row has not (dropped on the way to SQLite). */
const MONGODB_ONLY: Readonly<Record<string, readonly string[]>> = {
  refresh_families: ['expire_at'],
  refresh_tokens: ['expire_at'],
  socket_tickets: ['expire_at'],
  signing_keys: ['active'],
  chunks: ['ready', 'dl'],
  conversations: ['message_seq'],
};

/** The `_id` of a row of `t`: its key column, or its key columns joined with `/`. */
export function idOf(t: CopiedTable, row: CopyRow): string {
  return t.key.map((k) => String(row[k])).join('/');
}

/**
 * `row` of table `t` as the MongoDB document the MongoDB store keeps (schema.ts): the key as `_id`, JSON
 * text parsed, 0/1 as booleans, bytes as BinData (an embedding as a float32 vector), and the fields only
 * MongoDB has, computed from the row (`expire_at`, `active`, `dl`) or set for the copy's last step to
 * correct (`ready: false`, `message_seq: 0`: see copy-store.ts).
 */
export function rowToDocument(t: CopiedTable, row: CopyRow): Document {
  const doc: Document = { _id: idOf(t, row) };
  for (const [col, value] of Object.entries(row)) {
    if (value === undefined || (t.key.length === 1 && col === t.key[0])) continue;
    // A NULL JSON column parses as null ('null').
    if (t.json?.includes(col)) doc[col] = JSON.parse(String(value));
    else if (t.bool?.includes(col)) doc[col] = value === 1;
    else doc[col] = value;
  }
  switch (t.name) {
    case 'refresh_families': doc.expire_at = new Date(String(row.absolute_expires_at)); break;
    case 'refresh_tokens': doc.expire_at = new Date(String(row.expires_at)); break;
    case 'socket_tickets': doc.expire_at = new Date(String(row.expires_at)); break;
    case 'signing_keys': if (row.retired_at === null) doc.active = true; break;
    case 'document_sources':
      if (!doc.is_text) doc.content = new Binary(row.content as Uint8Array);
      break;
    case 'chunks':
      delete doc.rowid;
      doc.embedding = row.embedding instanceof Uint8Array ? Binary.fromFloat32Array(bytesToVector(row.embedding)) : null;
      doc.ready = false;
      doc.dl = chunkLength({ title: String(row.title), heading: String(row.heading), body: String(row.body) });
      break;
    case 'conversations': doc.message_seq = 0; break;
    default: break;
  }
  return doc;
}

/**
 * A MongoDB document of table `t` as its SQLite row (rowToDocument's inverse): `_id` back to the key
 * column (the fields of a several-column key are in the document), native values to JSON text, booleans
 * to 0/1, BinData to bytes (a float32 vector to its little-endian bytes), MongoDB's own fields dropped.
 * Missing fields are left out (the insert stores NULL).
 */
export function documentToRow(t: CopiedTable, doc: Document): CopyRow {
  const row: CopyRow = {};
  const drop = MONGODB_ONLY[t.name] ?? [];
  for (const [field, value] of Object.entries(doc)) {
    if (field === '_id' || drop.includes(field) || value === undefined) continue;
    if (t.json?.includes(field)) row[field] = value === null ? null : JSON.stringify(value);
    else if (t.bool?.includes(field)) row[field] = value === true ? 1 : 0;
    else if (value instanceof Binary) row[field] = t.name === 'chunks' && field === 'embedding' ? Buffer.from(vectorToBytes(value.toFloat32Array())) : Buffer.from(value.value());
    else row[field] = value as CopyRow[string];
  }
  if (t.key.length === 1) row[t.key[0]!] = doc._id as string;
  return row;
}
