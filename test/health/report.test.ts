// The health report (UIResponseWriter shape, overall status, HTTP code), the database and MQTT checks,
// and the table `voice-hub health` prints.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createDatabaseCheck, createMqttCheck, taggedCheck, type CheckResult, type HealthStatus } from '../../src/health/checks.js';
import { formatBytes } from '../../src/health/database-check.js';
import { httpStatusFor, runHealth, worstStatus, type HealthReport } from '../../src/health/report.js';
import { exitCodeFor, formatHealthTable } from '../../src/health/table.js';
import { silentLogger } from '../../src/log/logger.js';
import { MqttPublisher } from '../../src/mqtt/publisher.js';
import { openStore } from '../../src/store/index.js';
import { startMosquitto } from '../support/mosquitto.js';
import { tmpDir } from '../support/tmp.js';
import { waitUntil } from '../support/wait.js';

const TIME_SPAN = /^\d{2}:\d{2}:\d{2}(\.\d{7})?$/;
const fixed = (status: HealthStatus, description = status.toLowerCase()) => async (): Promise<CheckResult> => ({ status, description });

describe('runHealth', () => {
  const table: [HealthStatus[], HealthStatus, number][] = [
    [['Healthy', 'Healthy', 'Healthy'], 'Healthy', 200],
    [['Healthy', 'Degraded', 'Healthy'], 'Degraded', 200],
    [['Degraded', 'Unhealthy', 'Healthy'], 'Unhealthy', 503],
    [['Unhealthy', 'Degraded'], 'Unhealthy', 503],
    [[], 'Healthy', 200],
  ];
  for (const [statuses, overall, code] of table) {
    it(`${statuses.join(', ') || 'no checks'} -> ${overall}, HTTP ${code}`, async () => {
      const checks = Object.fromEntries(statuses.map((s, i) => [`c${i}`, fixed(s)]));
      const report = await runHealth(checks);
      assert.equal(report.status, overall);
      assert.equal(worstStatus(statuses), overall);
      assert.equal(httpStatusFor(report), code);
    });
  }

  it('writes the UIResponseWriter shape, entries in check order', async () => {
    const report = await runHealth({
      'voice-service': async () => ({ status: 'Healthy', description: 'ok', data: { serverUrl: 'ws://x/' }, tags: ['voice'] }),
      database: fixed('Healthy'),
      mqtt: async () => ({ status: 'Degraded', description: 'down', exception: 'boom' }),
    });
    assert.deepEqual(Object.keys(report), ['status', 'totalDuration', 'entries']);
    assert.deepEqual(Object.keys(report.entries), ['voice-service', 'database', 'mqtt']);
    assert.match(report.totalDuration, TIME_SPAN);
    const voice = report.entries['voice-service']!;
    assert.match(voice.duration, TIME_SPAN);
    assert.deepEqual({ ...voice, duration: 'x' }, { status: 'Healthy', description: 'ok', duration: 'x', data: { serverUrl: 'ws://x/' }, tags: ['voice'] });
    assert.equal('exception' in report.entries.database!, false, 'no exception key without an exception');
    assert.deepEqual(report.entries.database!.data, {});
    assert.deepEqual(report.entries.database!.tags, []);
    assert.equal(report.entries.mqtt!.exception, 'boom');
    // Members in the order the interface lists them, the exception before the tags.
    assert.deepEqual(Object.keys(voice), ['status', 'description', 'duration', 'data', 'tags']);
    assert.deepEqual(Object.keys(report.entries.mqtt!), ['status', 'description', 'duration', 'data', 'exception', 'tags']);
  });

  it('turns a throwing check into Unhealthy and a hanging one into Unhealthy after the timeout', async () => {
    const report = await runHealth(
      {
        throws: async () => {
          throw new Error('kaput');
        },
        throwsSync: (() => {
          throw new TypeError('sync kaput');
        }) as () => Promise<CheckResult>,
        hangs: () => new Promise<CheckResult>(() => {}),
        fine: fixed('Healthy'),
      },
      { timeoutMs: 100 },
    );
    assert.equal(report.status, 'Unhealthy');
    assert.deepEqual([report.entries.throws!.description, report.entries.throws!.exception], ['kaput', 'kaput']);
    assert.equal(report.entries.throwsSync!.description, 'sync kaput');
    assert.equal(report.entries.hangs!.description, 'check did not complete within 100 ms');
    assert.equal(report.entries.fine!.status, 'Healthy');
  });

  // The voice-service entry of an upstream that accepts and never answers (ConnectTimeout over 10 s)
  // lost its tags: a dashboard filtering by tag no longer found the failed component.
  it('a check that hangs or throws keeps the tags it was registered with', async () => {
    const report = await runHealth(
      {
        hangs: taggedCheck(['voice', 'upstream'], () => new Promise<CheckResult>(() => {})),
        throws: taggedCheck(['database'], async () => {
          throw new Error('kaput');
        }),
        untagged: () => new Promise<CheckResult>(() => {}),
      },
      { timeoutMs: 100 },
    );
    assert.deepEqual(
      Object.values(report.entries).map((e) => [e.status, e.description, e.data, e.tags]),
      [
        ['Unhealthy', 'check did not complete within 100 ms', {}, ['voice', 'upstream']],
        ['Unhealthy', 'kaput', {}, ['database']],
        ['Unhealthy', 'check did not complete within 100 ms', {}, []],
      ],
    );
  });
});

describe('database check', () => {
  const options = { dataDir: '/', minFreeBytes: 0 };

  it('Unhealthy with the error message of a failing store', async () => {
    const check = createDatabaseCheck(
      {
        check: async () => {
          throw new Error('data dir /var/lib/voice-hub is not writable: EACCES');
        },
        flush: async () => {},
        lastWrite: undefined,
      },
      options,
    );
    assert.deepEqual(await check(), {
      status: 'Unhealthy',
      description: 'data dir /var/lib/voice-hub is not writable: EACCES',
      exception: 'data dir /var/lib/voice-hub is not writable: EACCES',
      data: {},
      tags: ['database'],
    });
  });

  it('Healthy on a real store, Unhealthy once it is closed', async () => {
    const dataDir = tmpDir();
    const store = await openStore({ dataDir, flushIntervalMs: 60_000, logger: silentLogger });
    const check = createDatabaseCheck(store, { dataDir, minFreeBytes: 0 });
    const healthy = await check();
    assert.equal(healthy.status, 'Healthy');
    assert.equal(typeof healthy.data?.freeBytes, 'number');
    await store.close();
    const closed = await check();
    assert.equal(closed.status, 'Unhealthy');
    assert.equal(closed.description, 'storage is closed');
  });

  it('formats free space as a technician reads it', () => {
    const table: Array<[number, string]> = [
      [0, '0 bytes'],
      [1023, '1023 bytes'],
      [1024, '1 KiB'],
      [1536, '1.5 KiB'],
      [64 * 1024 * 1024, '64 MiB'],
      [3.25 * 1024 ** 3, '3.3 GiB'],
      [2 * 1024 ** 5, '2048 TiB'],
    ];
    for (const [bytes, text] of table) assert.equal(formatBytes(bytes), text, String(bytes));
  });
});

describe('mqtt check', () => {
  const publisherFor = (port: number) =>
    new MqttPublisher({
      brokerAddress: '127.0.0.1', port, username: '', password: '', topicPrefix: `vh-${port}`,
      homeAssistantDiscovery: false, discoveryPrefix: 'homeassistant', logger: silentLogger,
      instanceId: `${port.toString(16).padStart(6, '0')}${process.pid.toString(16).padStart(6, '0')}`.slice(-12), version: 'test',
      hostname: `health-test-${port}-${process.pid}`, reconnectMinMs: 100, reconnectMaxMs: 500,
    });

  it('Healthy when connected to a real broker, Degraded with the reason when it is gone', async () => {
    const broker = await startMosquitto();
    after(() => broker.stop());
    const publisher = publisherFor(broker.port);
    after(() => publisher.close());
    const check = createMqttCheck(publisher);
    assert.deepEqual(await check(), {
      status: 'Degraded',
      description: `not connected to 127.0.0.1:${broker.port}`,
      data: { broker: `127.0.0.1:${broker.port}`, published: 0, dropped: 0, queued: 0, inFlight: 0 },
      tags: ['mqtt'],
    });
    publisher.start();
    await waitUntil(() => publisher.state().connected, 'the publisher to connect');
    const healthy = await check();
    assert.equal(healthy.status, 'Healthy');
    assert.equal(healthy.description, `connected to 127.0.0.1:${broker.port}`);
    await broker.stop();
    await waitUntil(() => /ECONNREFUSED/.test(publisher.state().lastError ?? ''), 'the publisher to notice');
    const degraded = await check();
    assert.equal(degraded.status, 'Degraded');
    assert.equal(degraded.description, `connect ECONNREFUSED 127.0.0.1:${broker.port}`);
  });

  it('works with any object that has state()', async () => {
    const result = await createMqttCheck({ state: () => ({ connected: false }) })();
    assert.deepEqual(result, { status: 'Degraded', description: 'not connected to the MQTT broker', data: {}, tags: ['mqtt'] });
  });
});

describe('health table', () => {
  const report: HealthReport = {
    status: 'Unhealthy',
    totalDuration: '00:00:00.0123456',
    entries: {
      'voice-service': { status: 'Unhealthy', description: 'connect ECONNREFUSED 127.0.0.1:5050', duration: '00:00:00.0021000', data: {}, exception: 'connect ECONNREFUSED 127.0.0.1:5050', tags: [] },
      database: { status: 'Healthy', description: 'database readable,\ndata directory writable', duration: '00:00:01.5000000', data: {}, tags: [] },
      mqtt: { status: 'Degraded', description: 'not connected to localhost:1883', duration: 'garbled', data: {}, exception: 'Keepalive timeout', tags: [] },
    },
  };
  const text = formatHealthTable(report);
  const lines = text.trimEnd().split('\n');

  it('puts the overall status on top', () => assert.equal(lines[0], 'Overall: Unhealthy (12.3 ms)'));

  it('has one aligned row per component', () => {
    assert.match(lines[2]!, /^COMPONENT\s+STATUS\s+DURATION\s+DESCRIPTION$/);
    const rows = lines.slice(3);
    assert.equal(rows.length, 3);
    assert.match(rows[0]!, /^voice-service\s+Unhealthy\s+2\.1 ms\s+connect ECONNREFUSED 127\.0\.0\.1:5050$/);
    assert.match(rows[1]!, /^database\s+Healthy\s+1\.50 s\s+database readable, data directory writable$/);
    assert.match(rows[2]!, /^mqtt\s+Degraded\s+garbled\s+not connected to localhost:1883 \(Keepalive timeout\)$/);
    const statusColumn = lines.slice(2).map((l) => l.search(/STATUS|Unhealthy|Healthy|Degraded/));
    assert.equal(new Set(statusColumn).size, 1, 'the status column lines up');
  });

  it('exit codes: 0 Healthy, 1 Degraded, 2 Unhealthy', () => {
    assert.deepEqual((['Healthy', 'Degraded', 'Unhealthy'] as const).map(exitCodeFor), [0, 1, 2]);
  });
});
