// The simulator's counters (src/cli/sim-tally.ts), table-driven: each row a sequence of what a device did
// and heard, and the counts SIMULATE_COUNTERS promises for it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimTally, type PacketCounts, type ResponseCounts } from '../../src/cli/sim-tally.js';

const LATE = 1000;
const PERIOD = 50;

type Step =
  | ['send', number, number] // content, at
  | ['held']
  | ['processed', number, number] // sequence, at
  | ['refused']
  | ['lost'] // connection lost
  | ['response', number, number]; // content, at

interface Row {
  name: string;
  steps: Step[];
  serverPackets?: number;
  packets: Partial<PacketCounts>;
  responses: Partial<ResponseCounts>;
  settled?: boolean;
}

/** n packets sent 20 ms apart from t=0, contents cycling through the period. */
const sends = (n: number, from = 0): Step[] => Array.from({ length: n }, (_, i) => ['send', (from + i) % PERIOD, (from + i) * 20] as Step);
const processedAll = (n: number, from = 1, at = 5): Step[] => Array.from({ length: n }, (_, i) => ['processed', from + i, at + i * 20] as Step);
const answers = (n: number, from = 0, at = 10): Step[] => Array.from({ length: n }, (_, i) => ['response', (from + i) % PERIOD, at + i * 20] as Step);

const ROWS: Row[] = [
  {
    name: 'everything arrives once, in time',
    steps: [...sends(3), ...processedAll(3), ...answers(3)],
    packets: { due: 3, processed: 3, lost: 0, duplicated: 0, late: 0 },
    responses: { expected: 3, received: 3, answered: 3, lost: 0, duplicated: 0, late: 0 },
    settled: true,
  },
  {
    name: 'a refused packet is neither arrived nor lost, and no answer is matched to it',
    steps: [['send', 0, 0], ['send', 1, 20], ['refused'], ['processed', 1, 30], ['response', 1, 40]],
    serverPackets: 1,
    packets: { due: 2, processed: 1, refused: 1, lost: 0 },
    responses: { expected: 1, answered: 1, lost: 0, duplicated: 0 },
  },
  {
    name: 'an AudioProcessed seen twice, or for nothing sent, is duplicated',
    steps: [...sends(2), ['processed', 1, 5], ['processed', 1, 6], ['processed', 2, 25], ['processed', 3, 30]],
    packets: { due: 2, processed: 2, duplicated: 2, lost: 0 },
    responses: {},
  },
  {
    name: 'a dropped connection: its unanswered sends and the packets held back are lost; the session numbers on',
    steps: [
      ...sends(3), ['processed', 1, 5], // packets 2 and 3 were cut off in flight
      ['lost'], ['held'], ['held'],
      ['send', 5, 100], ['send', 6, 120], ['processed', 2, 105], ['processed', 3, 125],
      ['response', 0, 10], ['response', 5, 110], ['response', 6, 130],
    ],
    serverPackets: 3,
    packets: { due: 7, heldBack: 2, processed: 3, lost: 4, duplicated: 0 },
    responses: { expected: 3, received: 3, answered: 3, lost: 0, duplicated: 0 },
    settled: true,
  },
  {
    name: 'processed while the device was away: the service counted it, the device never heard (lost both ways)',
    steps: [...sends(2), ['processed', 1, 5], ['lost'], ['send', 2, 40], ['processed', 3, 45], ['response', 2, 50]],
    serverPackets: 3,
    packets: { due: 3, processed: 2, lost: 1 },
    responses: { expected: 3, answered: 1, lost: 2, duplicated: 0 },
  },
  {
    name: 'arriving more than the late threshold after the send counts as late (exactly at it does not), both ways',
    steps: [['send', 0, 0], ['send', 1, 20], ['processed', 1, 1001], ['processed', 2, 1020], ['response', 0, 1000], ['response', 1, 1500]],
    packets: { processed: 2, late: 1 },
    responses: { answered: 2, late: 1 },
  },
  {
    name: 'an answer for a packet already answered, with nothing later carrying its bytes, is duplicated',
    steps: [...sends(3), ...processedAll(3), ...answers(2), ['response', 1, 60], ['response', 2, 70]],
    packets: { processed: 3 },
    responses: { expected: 3, received: 4, answered: 3, duplicated: 1, lost: 0 },
  },
  {
    name: 'a replayed answer that would skip half a period to the next packet with its bytes is duplicated',
    steps: [...sends(60), ...processedAll(60), ...answers(10), ['response', 9, 300], ...answers(50, 10, 400)],
    packets: { processed: 60, lost: 0 },
    responses: { expected: 60, received: 61, answered: 60, duplicated: 1, lost: 0 },
    settled: true,
  },
  {
    name: 'after a gap of unanswered packets, the next answer matches the packet that has its bytes',
    steps: [...sends(20), ...processedAll(20), ...answers(5), ...answers(5, 15, 400)],
    packets: { processed: 20 },
    responses: { expected: 20, answered: 10, lost: 10, duplicated: 0 },
    settled: false,
  },
  {
    name: 'an answer with bytes the device never sent is duplicated',
    steps: [['send', 0, 0], ['processed', 1, 5], ['response', -1, 10], ['response', 0, 12]],
    packets: { processed: 1 },
    responses: { received: 2, answered: 1, duplicated: 1 },
  },
];

describe('SimTally', () => {
  for (const row of ROWS) {
    it(row.name, () => {
      const tally = new SimTally(LATE, PERIOD);
      for (const step of row.steps) {
        switch (step[0]) {
          case 'send': tally.send(step[1], step[2]); break;
          case 'held': tally.heldBack(); break;
          case 'processed': tally.processed(step[1], step[2]); break;
          case 'refused': tally.refused(); break;
          case 'lost': tally.connectionLost(); break;
          case 'response': tally.response(step[1], step[2]); break;
        }
      }
      const summary = tally.summary(row.serverPackets);
      assert.deepEqual(pick(summary.packets, row.packets), row.packets);
      assert.deepEqual(pick(summary.responses, row.responses), row.responses);
      // The identities hold in every row.
      const p = summary.packets;
      assert.equal(p.due, p.processed + p.refused + p.lost);
      const q = summary.responses;
      assert.equal(q.received, q.answered + q.duplicated);
      assert.equal(summary.latenciesMs.length, q.answered);
      if (row.settled !== undefined) assert.equal(tally.settled, row.settled);
    });
  }
});

function pick<T extends object>(all: T, wanted: Partial<T>): Partial<T> {
  return Object.fromEntries(Object.keys(wanted).map((k) => [k, all[k as keyof T]])) as Partial<T>;
}
