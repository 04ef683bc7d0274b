// The key a hub connection is counted under per client address, and the count itself
// (src/hub/address-slots.ts): what uWS' text of a peer address becomes, and that a place is given back.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_SIMULATED_DEVICES } from '../../src/cli/sim-defaults.js';
import { schemaDefaults } from '../../src/config/schema-keys.js';
import { AddressSlots, addressKey } from '../../src/hub/address-slots.js';

describe('addressKey', () => {
  const cases: Array<[string, string]> = [
    ['192.168.1.20', '192.168.1.20'],
    // uWS writes IPv6 peers in full, an IPv4 client of a dual-stack listener as IPv4-mapped.
    ['0000:0000:0000:0000:0000:ffff:c0a8:0114', '192.168.1.20'],
    ['::ffff:c0a8:114', '192.168.1.20'],
    ['0000:0000:0000:0000:0000:0000:0000:0001', '::/64'],
    ['2001:0db8:0000:0001:1111:2222:3333:4444', '2001:db8:0:1::/64'],
    ['2001:db8:0:1::9', '2001:db8:0:1::/64'],
    ['fe80::fc:ff:fe00:1', 'fe80::/64'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::/64'],
    // Not an address uWS would give: counted under its own text rather than merged with another.
    ['2001:db8::1::2', '2001:db8::1::2'],
    ['1:2:3:4:5:6:7', '1:2:3:4:5:6:7'],
    ['zz::1', 'zz::1'],
  ];
  for (const [text, key] of cases) {
    it(`${text} -> ${key}`, () => assert.equal(addressKey(text), key));
  }

  it('the addresses of one /64 share a key; the next prefix has its own', () => {
    assert.equal(addressKey('2001:db8:0:1:aaaa::1'), addressKey('2001:db8:0:1:bbbb:cccc:dddd:eeee'));
    assert.notEqual(addressKey('2001:db8:0:1::1'), addressKey('2001:db8:0:2::1'));
  });
});

describe('AddressSlots', () => {
  it('gives each key its limit, and a released place back', () => {
    const slots = new AddressSlots(2);
    assert.equal(slots.take('a'), true);
    assert.equal(slots.take('a'), true);
    assert.equal(slots.take('a'), false);
    assert.equal(slots.take('b'), true);
    assert.equal(slots.size, 2);
    slots.release('a');
    assert.equal(slots.size, 2);
    assert.equal(slots.take('a'), true);
    assert.equal(slots.take('a'), false);
  });

  it('forgets a key whose last place is given back', () => {
    const slots = new AddressSlots(1);
    slots.take('a');
    slots.release('a');
    slots.release('a');
    assert.equal(slots.size, 0);
    // The release too many gave nothing extra: the limit of one still holds.
    assert.equal(slots.take('a'), true);
    assert.equal(slots.take('a'), false);
  });

  it('0: no limit, nothing counted', () => {
    const slots = new AddressSlots(0);
    for (let i = 0; i < 1000; i++) assert.equal(slots.take('a'), true);
    assert.equal(slots.size, 0);
  });
});

it('the shipped limit per address lets `voice-hub simulate` run its most devices from one machine', () => {
  const hub = (schemaDefaults() as { Hub: { MaximumConnectionsPerAddress: number; MaximumConnections: number } }).Hub;
  assert.ok(hub.MaximumConnectionsPerAddress >= MAX_SIMULATED_DEVICES, `${hub.MaximumConnectionsPerAddress} < ${MAX_SIMULATED_DEVICES}`);
  // And keeps one host from taking the hub's every place.
  assert.ok(hub.MaximumConnectionsPerAddress < hub.MaximumConnections);
});
