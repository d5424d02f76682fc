/**
 * PARLEY_PROCESSES above 1 refuses what its children cannot share (docs/scaling.md): port 0 (each child
 * would listen on a free port of its own), one PARLEY_ADVERTISE_URL or PARLEY_INTERNAL_PORT for all of them
 * (every neighbour would forward to one child). One process, or a child the primary started, takes them.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';

describe('PARLEY_PROCESSES and the variables its children cannot share', () => {
  it('refuses port 0, naming the variable', () => {
    expect(() => loadConfig({ PARLEY_PROCESSES: '2', PARLEY_PORT: '0' })).toThrow(/^Invalid configuration:\n {2}PARLEY_PORT: 0 \(any free port\) cannot be shared/);
  });

  it('refuses an advertised address and an internal port, each on its own line, all at once', () => {
    let message = '';
    try {
      loadConfig({ PARLEY_PROCESSES: '3', PARLEY_PORT: '0', PARLEY_ADVERTISE_URL: 'http://10.0.0.5:9000', PARLEY_INTERNAL_PORT: '9000' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message.split('\n').map((l) => l.trim().split(':')[0])).toEqual(['Invalid configuration', 'PARLEY_PORT', 'PARLEY_ADVERTISE_URL', 'PARLEY_INTERNAL_PORT']);
  });

  it('takes each of them with one process, and a group on a fixed port without them', () => {
    expect(loadConfig({ PARLEY_PORT: '0', PARLEY_ADVERTISE_URL: 'http://10.0.0.5:9000', PARLEY_INTERNAL_PORT: '9000' }).cluster)
      .toMatchObject({ processes: 1, advertiseUrl: 'http://10.0.0.5:9000', internalPort: 9000 });
    expect(loadConfig({ PARLEY_PROCESSES: '1', PARLEY_PORT: '0' }).port).toBe(0);
    const group = loadConfig({ PARLEY_PROCESSES: '2', PARLEY_PORT: '8080' });
    expect(group.cluster.processes).toBe(2);
    expect(group.port).toBe(8080);
  });

  it('a child of a group (PARLEY_PROCESSES=1, internal port 0 from its primary) starts', () => {
    const child = loadConfig({ PARLEY_PROCESSES: '1', PARLEY_PORT: '8080', PARLEY_INTERNAL_PORT: '0', PARLEY_GROUP_CHILD: 'true', PARLEY_PROCESS_INDEX: '1' });
    expect(child.cluster).toMatchObject({ processes: 1, internalPort: 0, groupChild: true, index: 1 });
  });
});
