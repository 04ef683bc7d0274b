// The pieces that bound a connection's work, table-tested: the token bucket, the inbox that reads one
// message at a time across frames, and the throttled log of closed connections.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readBinaryMessage, writeBinaryMessage } from '../../src/hub/binary-format.js';
import { MessageTooLargeError } from '../../src/hub/errors.js';
import { Inbox } from '../../src/hub/inbox.js';
import { closingsSummary } from '../../src/hub/hub.js';
import { ThrottledLog } from '../../src/log/throttled.js';
import { TokenBucket } from '../../src/hub/rate-limit.js';
import { BYTES_PER_TOKEN, messageCost } from '../../src/message-cost.js';
import { readRecord } from '../../src/hub/text-format.js';
import { createLogger } from '../../src/log/logger.js';

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined): string | undefined => (b === undefined ? undefined : new TextDecoder().decode(b));

describe('token bucket', () => {
  it('gives the burst at once, then the rate', () => {
    const bucket = new TokenBucket({ perSecond: 10, burst: 3 }, 0);
    assert.deepEqual([bucket.take(0), bucket.take(0), bucket.take(0), bucket.take(0)], [true, true, true, false]);
    assert.equal(bucket.take(50), false, 'half a token after 50 ms');
    assert.equal(bucket.take(100), true, 'one token after 100 ms');
    assert.equal(bucket.take(100), false);
  });

  it('never holds more than the burst, however long it waited', () => {
    const bucket = new TokenBucket({ perSecond: 1000, burst: 2 }, 0);
    const taken = Array.from({ length: 5 }, () => bucket.take(60_000)).filter(Boolean).length;
    assert.equal(taken, 2);
  });

  it('a message costs a token per 4 KiB begun of it', () => {
    assert.equal(BYTES_PER_TOKEN, 4096);
    assert.deepEqual([0, 1, 4096, 4097, 8192, 8193, 65_536].map(messageCost), [1, 1, 1, 2, 2, 3, 16]);
    const bucket = new TokenBucket({ perSecond: 10, burst: 20 }, 0);
    assert.deepEqual([bucket.take(0, 16), bucket.take(0, 5), bucket.take(0, 4), bucket.take(0, 1)], [true, false, true, false]);
    assert.equal(bucket.take(450, 5), false, '4.5 tokens after 450 ms');
    assert.equal(bucket.take(500, 5), true, '5 tokens after 500 ms');
  });

  it('a message larger than the whole bucket costs a full one, not a close whatever it waited', () => {
    const bucket = new TokenBucket({ perSecond: 1, burst: 3 }, 0);
    assert.equal(bucket.take(0, 16), true);
    assert.equal(bucket.take(0, 1), false, 'the bucket is empty');
    assert.equal(bucket.take(2999, 16), false);
    assert.equal(bucket.take(3000, 16), true, 'full again after 3 s');
  });

  it('a larger budget adds its extra room, keeping what was spent', () => {
    const bucket = new TokenBucket({ perSecond: 1, burst: 4 }, 0);
    for (let i = 0; i < 4; i++) bucket.take(0);
    bucket.change({ perSecond: 100, burst: 10 }, 0);
    const taken = Array.from({ length: 20 }, () => bucket.take(0)).filter(Boolean).length;
    assert.equal(taken, 6);
    assert.deepEqual(bucket.limits, { perSecond: 100, burst: 10 });
  });
});

describe('inbox', () => {
  const never = (): boolean => assert.fail('no join expected');
  const always = (): boolean => true;

  it('reads the messages of a frame one at a time', () => {
    const inbox = new Inbox();
    inbox.push(bytes('a\u001ebb\u001e'));
    assert.equal(inbox.bytes, 5);
    assert.equal(text(inbox.next(readRecord, 100, never)), 'a');
    assert.equal(inbox.bytes, 3);
    assert.equal(text(inbox.next(readRecord, 100, never)), 'bb');
    assert.equal(inbox.next(readRecord, 100, never), undefined);
    assert.equal(inbox.bytes, 0);
  });

  it('joins a message that spans frames, paying for each join', () => {
    const inbox = new Inbox();
    let joins = 0;
    for (const part of ['{"ty', 'pe":', '6}\u001e{"x', '":1}\u001e']) inbox.push(bytes(part));
    const pay = (): boolean => ++joins > 0;
    assert.equal(text(inbox.next(readRecord, 100, pay)), '{"type":6}');
    assert.equal(text(inbox.next(readRecord, 100, pay)), '{"x":1}');
    assert.equal(joins, 3);
  });

  it('stops when the join is refused (the budget is spent)', () => {
    const inbox = new Inbox();
    inbox.push(bytes('ab'));
    inbox.push(bytes('c\u001e'));
    assert.equal(inbox.next(readRecord, 100, () => false), undefined);
  });

  it('binary messages across frames, the prefix cut too', () => {
    const framed = writeBinaryMessage(new Uint8Array(300).fill(7));
    const inbox = new Inbox();
    inbox.push(framed.slice(0, 1));
    assert.equal(inbox.next(readBinaryMessage, 1000, always), undefined);
    inbox.push(framed.slice(1, 100));
    inbox.push(framed.slice(100));
    const body = inbox.next(readBinaryMessage, 1000, always);
    assert.equal(body?.length, 300);
    assert.ok(body?.every((b) => b === 7));
  });

  it('a tail that can no longer fit in a message throws', () => {
    const inbox = new Inbox();
    inbox.push(bytes('x'.repeat(60)));
    inbox.push(bytes('x'.repeat(60)));
    assert.throws(() => inbox.next(readRecord, 100, always), MessageTooLargeError);
  });

  it('empty frames are ignored; clear forgets everything', () => {
    const inbox = new Inbox();
    inbox.push(new Uint8Array(0));
    inbox.push(bytes('a\u001e'));
    inbox.clear();
    assert.equal(inbox.bytes, 0);
    assert.equal(inbox.next(readRecord, 100, never), undefined);
  });
});

describe('throttled log of closed connections', () => {
  it('logs the first lines of a window, then one line with the count', async () => {
    const lines: string[] = [];
    const logger = createLogger({ levels: { Default: 'Information' }, write: (l) => lines.push(l), timestamps: false, journald: false });
    let now = 0;
    const log = new ThrottledLog(logger, 3, 50, () => now, closingsSummary);
    for (let i = 0; i < 10; i++) log.warn(`closing ${i}`);
    assert.equal(lines.length, 3);
    assert.match(lines[2]!, /closing 2$/);
    await new Promise((resolve) => setTimeout(resolve, 120));
    assert.equal(lines.length, 4);
    assert.match(lines[3]!, /: 7 more connections closed for misbehaving in the last 0 s; the last: closing 9$/);
    now = 100;
    log.info('closing 10');
    assert.match(lines[4]!, /closing 10$/, 'a new window logs again');
  });
});
