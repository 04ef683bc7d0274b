// The books of stateful reconnect, table-tested without sockets: the replay buffer (bounded in bytes,
// trimmed by acks, replayed in order, holding back past its limit, refusing past the hold limit) and
// the receive sequence (duplicates after a reconnect skipped, nothing before the Sequence message,
// acks only for what is new).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MessageType } from '../../src/hub/messages.js';
import { FrameQueue, frameBytes, type Frame } from '../../src/hub/stateful/frame-queue.js';
import { ReceiveSequence, isSequenced } from '../../src/hub/stateful/receive-sequence.js';
import { ReplayBuffer } from '../../src/hub/stateful/replay-buffer.js';
import { ACK_INTERVAL_MS, ACK_SLACK_MS, StatefulLink } from '../../src/hub/stateful/link.js';

const frame = (n: number, size = 10): string => `${n}:`.padEnd(size, 'x');
const replayed = (buffer: ReplayBuffer): Frame[] => {
  const out: Frame[] = [];
  buffer.replay((f) => out.push(f));
  return out;
};

describe('replay buffer', () => {
  it('numbers sent messages from 1 and replays the unacknowledged ones in order', () => {
    const buffer = new ReplayBuffer(1000, 1000);
    for (let i = 1; i <= 5; i++) assert.equal(buffer.offer(frame(i)), 'send');
    assert.equal(buffer.firstUnackedId, 1);
    assert.equal(buffer.nextId, 6);
    assert.equal(buffer.bytes, 50);
    assert.deepEqual(replayed(buffer), [1, 2, 3, 4, 5].map((n) => frame(n)));
  });

  it('an ack trims up to and including its id, never more; an id past the last trims all', () => {
    const buffer = new ReplayBuffer(1000, 1000);
    for (let i = 1; i <= 5; i++) buffer.offer(frame(i));
    buffer.ack(0, () => assert.fail('nothing is held'));
    assert.equal(buffer.firstUnackedId, 1);
    buffer.ack(3, () => assert.fail('nothing is held'));
    assert.equal(buffer.firstUnackedId, 4);
    assert.equal(buffer.bytes, 20);
    assert.deepEqual(replayed(buffer), [frame(4), frame(5)]);
    buffer.ack(2, () => assert.fail('nothing is held'));
    assert.equal(buffer.firstUnackedId, 4, 'an old ack changes nothing');
    buffer.ack(99, () => assert.fail('nothing is held'));
    assert.equal(buffer.bytes, 0);
    assert.equal(buffer.firstUnackedId, 6, 'the next message sent is 6');
    assert.deepEqual(replayed(buffer), []);
  });

  it('holds messages back once more than the limit waits, in order, and lets them out as acks make room', () => {
    const buffer = new ReplayBuffer(30, 1000);
    assert.deepEqual([1, 2, 3, 4, 5, 6].map((n) => buffer.offer(frame(n))), ['send', 'send', 'send', 'send', 'held', 'held']);
    assert.equal(buffer.bytes, 40);
    assert.equal(buffer.heldBytes, 20);
    assert.deepEqual(replayed(buffer), [frame(1), frame(2), frame(3), frame(4)], 'held messages were never sent');
    const released: Frame[] = [];
    const push = (f: Frame): void => void released.push(f);
    buffer.ack(1, push);
    assert.deepEqual(released, [], 'an ack that leaves the limit itself unacknowledged lets nothing out');
    buffer.ack(2, push);
    assert.deepEqual(released, [frame(5), frame(6)], 'under the limit: the waiting message, then the next while no more than the limit waits');
    assert.equal(buffer.offer(frame(7)), 'held', 'more than the limit waits again');
    buffer.ack(3, push);
    assert.equal(buffer.offer(frame(8)), 'held', 'nothing overtakes a held message');
    assert.deepEqual(released, [frame(5), frame(6)], 'the limit itself is left: the waiting message still waits');
    buffer.ack(4, push);
    assert.deepEqual(released, [frame(5), frame(6), frame(7), frame(8)]);
    assert.equal(buffer.heldBytes, 0);
    assert.equal(buffer.firstUnackedId, 5);
    assert.deepEqual(replayed(buffer), [frame(5), frame(6), frame(7), frame(8)]);
  });

  it('refuses a message past the hold limit and keeps what it had', () => {
    const buffer = new ReplayBuffer(10, 25);
    assert.equal(buffer.offer(frame(1)), 'send');
    assert.equal(buffer.offer(frame(2)), 'send');
    assert.equal(buffer.offer(frame(3)), 'held');
    assert.equal(buffer.offer(frame(4)), 'held');
    assert.equal(buffer.offer(frame(5)), 'overflow');
    assert.equal(buffer.heldBytes, 20);
    assert.equal(buffer.bytes, 20);
  });

  it('counts text by its UTF-8 bytes and binary by its length', () => {
    assert.equal(frameBytes('abc'), 3);
    assert.equal(frameBytes('ä€'), 5);
    assert.equal(frameBytes(new Uint8Array(7)), 7);
    const buffer = new ReplayBuffer(6, 100);
    assert.equal(buffer.offer('€€'), 'send');
    assert.equal(buffer.offer('a'), 'send', '6 bytes are unacknowledged: the limit, not more');
    assert.equal(buffer.offer('b'), 'held', '7 bytes are unacknowledged: more than the limit');
  });

  it('keeps references to the frames it is given (a group frame is shared, not copied)', () => {
    const shared = new Uint8Array([1, 2, 3]);
    const a = new ReplayBuffer(100, 100);
    const b = new ReplayBuffer(100, 100);
    a.offer(shared);
    b.offer(shared);
    assert.equal(replayed(a)[0], shared);
    assert.equal(replayed(b)[0], shared);
  });

  it('stays correct over many thousands of messages (its arrays are compacted as acks come)', () => {
    const buffer = new ReplayBuffer(500, 10_000);
    let next = 1;
    for (let round = 0; round < 2000; round++) {
      for (let i = 0; i < 5; i++) buffer.offer(frame(next++));
      buffer.ack(next - 3, () => undefined);
    }
    assert.deepEqual(replayed(buffer), [frame(next - 2), frame(next - 1)]);
    assert.equal(buffer.bytes, 20);
  });
});

describe('frame queue', () => {
  it('shifts in order and drops its references', () => {
    const queue = new FrameQueue();
    for (let i = 0; i < 600; i++) queue.push(frame(i), 10);
    for (let i = 0; i < 590; i++) assert.equal(queue.shift(), frame(i));
    assert.equal(queue.length, 10);
    assert.equal(queue.bytes, 100);
    assert.equal(queue.at(0), frame(590));
    for (let i = 590; i < 600; i++) assert.equal(queue.shift(), frame(i));
    assert.equal(queue.shift(), undefined);
    assert.equal(queue.bytes, 0);
  });
});

describe('receive sequence', () => {
  const I = MessageType.Invocation;

  it('numbers sequenced messages only (invocations, stream items, completions, cancels)', () => {
    assert.deepEqual(
      Object.values(MessageType).filter(isSequenced),
      [MessageType.Invocation, MessageType.StreamItem, MessageType.Completion, MessageType.StreamInvocation, MessageType.CancelInvocation],
    );
  });

  it('after a reconnect skips what was handled, ignoring everything before the Sequence message', () => {
    const seq = new ReceiveSequence();
    for (let i = 0; i < 5; i++) assert.equal(seq.accept(I), true);
    assert.equal(seq.accept(MessageType.Ping), true);
    // The client had 3..7 unacknowledged: it sends Sequence(3), then 3..7 again.
    seq.expectSequence();
    assert.equal(seq.accept(I), false, 'before the Sequence message');
    assert.equal(seq.accept(MessageType.Ping), false, 'before the Sequence message');
    assert.equal(seq.accept(MessageType.Sequence), true);
    seq.reset(3);
    assert.deepEqual([3, 4, 5, 6, 7].map(() => seq.accept(I)), [false, false, false, true, true]);
  });

  it('refuses a Sequence past what was received (a protocol error, as in ASP.NET)', () => {
    const seq = new ReceiveSequence();
    seq.accept(I);
    seq.reset(2);
    assert.throws(() => seq.reset(3), { name: 'InvalidDataError', message: "Sequence ID greater than amount of messages we've received." });
    assert.throws(() => seq.reset(0), { name: 'InvalidDataError', message: 'Sequence ID must be 1 or more.' });
  });

  it('acknowledges only what is new', () => {
    const seq = new ReceiveSequence();
    assert.equal(seq.takeAck(), undefined);
    seq.accept(I);
    seq.accept(I);
    assert.equal(seq.takeAck(), 2);
    assert.equal(seq.takeAck(), undefined);
    seq.accept(MessageType.Ping);
    assert.equal(seq.takeAck(), undefined, 'pings are not acknowledged');
  });

  it('acknowledges again what the client resends after a reconnect: its ack was lost', () => {
    const seq = new ReceiveSequence();
    seq.accept(I);
    seq.accept(I);
    assert.equal(seq.takeAck(), 2, 'acknowledged into a socket that was already dead');
    seq.expectSequence();
    seq.accept(MessageType.Sequence);
    seq.reset(1);
    assert.equal(seq.accept(I), false);
    assert.equal(seq.takeAck(), undefined, 'not for an older duplicate alone');
    assert.equal(seq.accept(I), false);
    assert.equal(seq.takeAck(), 2, 'the last one handled, resent: its ack is due again');
    assert.equal(seq.takeAck(), undefined);
  });
});

describe('stateful link', () => {
  it('acknowledges at most once per interval', () => {
    const link = new StatefulLink(1000, 1000, 0);
    link.accept(MessageType.Invocation);
    assert.equal(link.ackDue(ACK_INTERVAL_MS - ACK_SLACK_MS - 1), undefined);
    assert.equal(link.ackDue(ACK_INTERVAL_MS), 1);
    link.accept(MessageType.Invocation);
    assert.equal(link.ackDue(ACK_INTERVAL_MS + 10), undefined, 'too soon');
    assert.equal(link.ackDue(2 * ACK_INTERVAL_MS), 2);
  });

  it('a heartbeat tick measured a fraction of a millisecond short of the interval still acknowledges', () => {
    const link = new StatefulLink(1000, 1000, 0);
    for (let tick = 1; tick <= 5; tick++) {
      link.accept(MessageType.Invocation);
      // Ticks of a 1 s timer, each measured 0.2 ms short by the monotonic clock.
      assert.equal(link.ackDue(tick * (ACK_INTERVAL_MS - 0.2)), tick, `tick ${tick}`);
    }
  });
});
