/**
 * The pure parts of connecting to MongoDB (src/store/mongodb/connection.ts): the client options, the hosts
 * and database a URI names, the password never shown, and the refusal of a standalone server.
 */
import { describe, expect, it } from 'vitest';
import { clientOptions, connect, databaseOf, hostsOf, MongoStartupError, topologyProblem, unreachableMessage, withoutPassword } from '../../src/store/mongodb/connection.js';
import { freePort } from '../helpers/main-process.js';

describe('MongoDB connection', () => {
  it('client options: majority writes and reads on the primary, retries, the bounded pool and waits as given', () => {
    expect(clientOptions({ maxPoolSize: 64, waitQueueTimeoutMS: 1000, serverSelectionTimeoutMS: 10_000 })).toEqual({
      appName: 'parley', maxPoolSize: 64, waitQueueTimeoutMS: 1000, serverSelectionTimeoutMS: 10_000,
      writeConcern: { w: 'majority' }, readConcern: { level: 'majority' }, readPreference: 'primary',
      retryWrites: true, retryReads: true, ignoreUndefined: true,
    });
    expect(clientOptions({ maxPoolSize: 2, waitQueueTimeoutMS: 5, serverSelectionTimeoutMS: 6, appName: 'parley-feed' }).appName).toBe('parley-feed');
  });

  it('hostsOf names the hosts without user, password, database or options', () => {
    expect(hostsOf('mongodb://u:p@a.example:27017,b.example:27018/parley?replicaSet=rs0')).toBe('a.example:27017,b.example:27018');
    expect(hostsOf('mongodb+srv://u:p@cluster0.example.net/?retryWrites=true')).toBe('cluster0.example.net');
    expect(hostsOf('MONGODB://h')).toBe('h');
    expect(hostsOf('postgres://h/db')).toBe('(unparsable MongoDB URI)');
    expect(hostsOf('mongodb:///db')).toBe('(unparsable MongoDB URI)');
    expect(hostsOf('see mongodb://h')).toBe('(unparsable MongoDB URI)');
  });

  it('databaseOf reads the path, undefined when there is none', () => {
    expect(databaseOf('mongodb://h:1/parley_prod?replicaSet=rs0')).toBe('parley_prod');
    expect(databaseOf('mongodb://u:p@h/my%20db')).toBe('my db');
    expect(databaseOf('mongodb://h/?replicaSet=rs0')).toBeUndefined();
    expect(databaseOf('mongodb://h')).toBeUndefined();
  });

  it('withoutPassword hides the password as written and decoded, and leaves text without one alone', () => {
    const uri = 'mongodb://parley:p%40ss%2Fw0rd@h:27017/db';
    expect(withoutPassword('auth p%40ss%2Fw0rd failed for p@ss/w0rd', uri)).toBe('auth *** failed for ***');
    expect(withoutPassword('nothing secret', 'mongodb://h/db')).toBe('nothing secret');
    expect(withoutPassword('user parley', 'mongodb://parley@h/db')).toBe('user parley');
    expect(withoutPassword('user parley', 'mongodb://parley:@h/db')).toBe('user parley');
    // A password that is not valid percent-encoding is hidden as written.
    expect(withoutPassword('bad %zz here', 'mongodb://u:%zz@h/db')).toBe('bad *** here');
    expect(withoutPassword('plain pw', 'mongodb://u:pw@h/db')).toBe('plain ***');
    expect(withoutPassword('pw', 'see mongodb://u:pw@h/db')).toBe('pw');
  });

  it('the unreachable message names the hosts, the timeout and the cause, never the password', () => {
    const uri = 'mongodb://parley:hunter2hunter2@db1:27017,db2:27017/parley?replicaSet=rs0';
    expect(unreachableMessage(uri, new Error('connect ECONNREFUSED 10.0.0.5:27017 (hunter2hunter2)'), 10_000))
      .toBe('Could not connect to MongoDB at db1:27017,db2:27017 (server selection timeout 10000 ms): connect ECONNREFUSED 10.0.0.5:27017 (***)');
    expect(unreachableMessage('mongodb://h', 'plain', 5)).toBe('Could not connect to MongoDB at h (server selection timeout 5 ms): plain');
  });

  it('a replica set member or a mongos is accepted; a standalone server is refused, saying why', () => {
    expect(topologyProblem({ setName: 'rs0', isWritablePrimary: true }, 'h:1')).toBeUndefined();
    expect(topologyProblem({ msg: 'isdbgrid' }, 'h:1')).toBeUndefined();
    expect(topologyProblem({ isWritablePrimary: true }, 'h:1')).toBe(
      'MongoDB at h:1 is a standalone server, not a replica set: Parley needs transactions and change streams, which MongoDB offers only on a '
      + 'replica set (a single-member replica set will do: start mongod with --replSet rs0, run rs.initiate() once, and add ?replicaSet=rs0 to PARLEY_MONGODB_URI).',
    );
    expect(topologyProblem({ msg: 'other', setName: 5 }, 'h:1')).toContain('standalone');
  });

  it('connect to a closed port gives up after the selection timeout with a MongoStartupError naming the host, not the password', async () => {
    const port = await freePort();
    const err = await connect({ uri: `mongodb://u:Secr3tPw@127.0.0.1:${port}/db`, maxPoolSize: 1, waitQueueTimeoutMS: 100, serverSelectionTimeoutMS: 150 }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(MongoStartupError);
    expect((err as Error).message).toMatch(new RegExp(`^Could not connect to MongoDB at 127\\.0\\.0\\.1:${port} \\(server selection timeout 150 ms\\): .*ECONNREFUSED`));
    expect((err as Error).message).not.toContain('Secr3tPw');
    expect((err as Error).name).toBe('MongoStartupError');
  });

  it('connect refuses a connection string the driver cannot parse, without echoing its password', async () => {
    const err = await connect({ uri: 'mongodb://u:Secr3tPw@h:notaport/db', maxPoolSize: 1, waitQueueTimeoutMS: 100, serverSelectionTimeoutMS: 150 }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(MongoStartupError);
    expect((err as Error).message).toMatch(/^PARLEY_MONGODB_URI is not a valid MongoDB connection string \(h:notaport\): /);
    expect((err as Error).message).not.toContain('Secr3tPw');
  });
});
