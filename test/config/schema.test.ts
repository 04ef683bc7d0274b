// The one schema: it describes every key, its defaults are the shipped file's, and ajv accepts it
// in strict mode.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { Ajv } from 'ajv';
import { CONFIG_SCHEMA } from '../../src/config/schema.js';
import { envName, leafKeys, resolveKey, schemaDefaults } from '../../src/config/schema-keys.js';
import { parseJsonText } from '../../src/config/json-text.js';
import { vocabulary } from '../../src/config/vocabulary.js';

const SHIPPED = path.resolve(import.meta.dirname, '../../config/appsettings.json');

// The interface's configuration keys, then voice-hub's own (product keys), plus HTTPS (issue 7), in that order.
const EXPECTED_KEYS = [
  'Logging.LogLevel.Default', 'Logging.LogLevel.Microsoft.AspNetCore', 'AllowedHosts',
  'VoiceService.ServerUrl', 'VoiceService.ApiKey', 'VoiceService.EnableVoice', 'VoiceService.AudioSampleRate',
  'VoiceService.AudioChannels', 'VoiceService.ConnectTimeout', 'VoiceService.SessionIdleTimeout', 'VoiceService.DeviceReconnectGracePeriod', 'VoiceService.RequireDeviceToken',
  'VoiceService.CaFile',
  'VoiceService.DecodeQueuePackets', 'VoiceService.DecodeQueueBytes', 'VoiceService.DecoderThreads', 'VoiceService.OpusLibrary', 'VoiceService.DecoderQueuePerThread',
  'VoiceService.DecoderRebuildsPerSecond',
  'VoiceService.ReconnectAttempts', 'VoiceService.ReconnectWindow', 'VoiceService.ReconnectDelay', 'VoiceService.ReconnectMaxDelay',
  'VoiceService.ReconnectStableAfter',
  'DeviceManagement.AllowDeviceRegistration', 'DeviceManagement.MaxDevices', 'DeviceManagement.TokenExpiration',
  'Mqtt.BrokerAddress', 'Mqtt.Port', 'Mqtt.Username', 'Mqtt.Password', 'Mqtt.TopicPrefix', 'Mqtt.HomeAssistantDiscovery', 'Mqtt.DiscoveryPrefix',
  'ApiKeys', 'Cors.AllowedOrigins', 'Server.Host', 'Server.Port', 'Server.HttpsPort', 'Server.Certificate.Path', 'Server.Certificate.KeyPath',
  'Server.HttpsRedirect', 'Server.MaxBodyBytes', 'Storage.DataDir', 'Storage.FlushInterval', 'Storage.SessionHistory', 'Storage.MaxDatabaseBytes', 'Storage.MinFreeBytes', 'Auth.SigningKey',
  'Hub.MaximumReceiveMessageSize', 'Hub.MaximumConnections', 'Hub.MaximumConnectionsPerAddress', 'Hub.MaximumUnsentBytes', 'Hub.KeepAliveInterval', 'Hub.ClientTimeout',
  // Per-connection budgets (issue 12).
  'Hub.MaximumFrameSize', 'Hub.MessagesPerTurn', 'Hub.MessageRate', 'Hub.MessageBurst',
  'Hub.UnauthenticatedMessageRate', 'Hub.UnauthenticatedMessageBurst', 'Hub.UnauthenticatedAddressMessageRate', 'Hub.UnauthenticatedAddressMessageBurst',
  'Hub.AllowStatefulReconnects', 'Hub.StatefulReconnectBufferSize', 'Hub.DisconnectTimeout',
];

describe('configuration schema', () => {
  it('has exactly the interface keys and our own', () => {
    assert.deepEqual(leafKeys().map((k) => k.key), EXPECTED_KEYS);
  });

  it('gives every key a type, a default, a description and an expectation', () => {
    for (const { key, node } of leafKeys()) {
      assert.ok(node.type, key);
      assert.ok(node.default !== undefined, key);
      assert.ok(node.description && node.description.length > 10, key);
      assert.ok(node['x-expected'], key);
    }
  });

  it('its defaults are the shipped config/appsettings.json, key for key', () => {
    const shipped = parseJsonText(readFileSync(SHIPPED, 'utf8'));
    assert.deepEqual(JSON.parse(JSON.stringify(shipped)), schemaDefaults());
    assert.equal(JSON.stringify(shipped), JSON.stringify(schemaDefaults()), 'same key order');
  });

  it('ships the interface defaults, with our echo server and no placeholder secret', () => {
    const d = schemaDefaults() as Record<string, Record<string, unknown>>;
    assert.deepEqual(d.Logging, { LogLevel: { Default: 'Information', 'Microsoft.AspNetCore': 'Warning' } });
    assert.equal(d.AllowedHosts, '*');
    assert.equal(d.VoiceService!.ServerUrl, 'ws://127.0.0.1:5050/voice');
    assert.equal(d.VoiceService!.ApiKey, '');
    assert.equal(d.VoiceService!.AudioSampleRate, 16000);
    assert.equal(d.DeviceManagement!.MaxDevices, 10);
    assert.equal(d.DeviceManagement!.TokenExpiration, '24:00:00');
    assert.equal(d.Mqtt!.Port, 1883);
    assert.deepEqual(d.ApiKeys, []);
  });

  it('compiles in ajv strict mode once its four extension keywords are declared', () => {
    const ajv = new Ajv({ strict: true });
    ajv.addKeyword({ keyword: 'x-expected', schemaType: 'string' });
    ajv.addKeyword({ keyword: 'x-timespan', schemaType: 'object' });
    ajv.addKeyword({ keyword: 'x-public-form', schemaType: 'string' });
    ajv.addKeyword({ keyword: 'x-max-names', schemaType: 'number' });
    for (const format of Object.keys(vocabulary.formats)) ajv.addFormat(format, true);
    assert.equal(typeof ajv.compile(CONFIG_SCHEMA), 'function');
  });

  const resolutions: Array<[string[], string | undefined]> = [
    [['server', 'PORT'], 'Server.Port'],
    [['Logging', 'LogLevel', 'Microsoft', 'AspNetCore'], 'Logging.LogLevel.Microsoft.AspNetCore'],
    [['Logging', 'LogLevel', 'Voice.Upstream'], 'Logging.LogLevel.Voice.Upstream'],
    [['Logging', 'Console'], undefined],
    [['Server'], undefined],
    [['Server', 'Port', 'X'], undefined],
    [['Nope'], undefined],
  ];
  for (const [segments, key] of resolutions) {
    it(`resolves ${segments.join('/')} to ${key ?? 'nothing'}`, () => {
      const r = resolveKey(segments);
      assert.equal(r?.kind === 'leaf' ? r.path.join('.') : undefined, key);
    });
  }

  it('names environment variables with __', () => {
    assert.equal(envName(['VoiceService', 'ServerUrl']), 'VoiceService__ServerUrl');
  });
});
