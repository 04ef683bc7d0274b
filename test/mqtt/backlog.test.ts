// RetainedBacklog: what is owed to the broker, kept as items and built into messages when sent. Pure.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RetainedBacklog, type Owed } from '../../src/mqtt/backlog.js';

/** A device's configs are three messages here, everything else one; `gone` ids resolve to nothing. */
function backlog(version: { n: number }, gone = new Set<string>()): RetainedBacklog {
  return new RetainedBacklog(
    (item: Owed) => {
      if ('id' in item && gone.has(item.id)) return [];
      const name = 'id' in item ? `${item.kind}/${item.id}` : item.kind;
      const count = item.kind === 'deviceDiscovery' ? 3 : 1;
      return Array.from({ length: count }, (_, i) => ({ topic: `${name}/${i}`, payload: `v${version.n}`, retain: true }));
    },
    (item) => (item.kind === 'deviceDiscovery' ? 3 : 1),
  );
}
const drain = (b: RetainedBacklog): string[] => {
  const out: string[] = [];
  for (let m = b.next(); m; m = b.next()) out.push(`${m.topic}=${m.payload}`);
  return out;
};

describe('RetainedBacklog', () => {
  it('owing again keeps the first place; payloads are built when sent, from the state of then', () => {
    const version = { n: 1 };
    const b = backlog(version);
    b.owe({ kind: 'deviceState', id: 'a' });
    b.owe({ kind: 'hubState' });
    b.owe({ kind: 'deviceState', id: 'a' });
    assert.equal(b.size, 2);
    version.n = 2;
    assert.deepEqual(drain(b), ['deviceState/a/0=v2', 'hubState/0=v2']);
    assert.equal(b.size, 0);
  });

  it('counts messages, the rest of an item being sent included', () => {
    const b = backlog({ n: 1 });
    b.owe({ kind: 'deviceDiscovery', id: 'a' });
    b.owe({ kind: 'deviceState', id: 'a' });
    assert.equal(b.size, 4);
    assert.equal(b.next()?.topic, 'deviceDiscovery/a/0');
    assert.equal(b.size, 3);
  });

  it('forgetting a device drops what it owes, also the rest of its configs being sent', () => {
    const b = backlog({ n: 1 });
    b.owe({ kind: 'deviceDiscovery', id: 'a' });
    b.owe({ kind: 'deviceState', id: 'a' });
    b.owe({ kind: 'deviceState', id: 'b' });
    assert.equal(b.next()?.topic, 'deviceDiscovery/a/0');
    b.forget('a');
    assert.equal(b.size, 1);
    assert.deepEqual(drain(b), ['deviceState/b/0=v1']);
  });

  it('an item that resolves to nothing (its device is gone) is skipped', () => {
    const b = backlog({ n: 1 }, new Set(['a']));
    b.owe({ kind: 'deviceDiscovery', id: 'a' });
    b.owe({ kind: 'hubDiscovery' });
    assert.deepEqual(drain(b), ['hubDiscovery/0=v1']);
    assert.equal(b.next(), undefined);
  });
});
