// The one schema of the configuration: every key's type, range, default and description. Built-in
// defaults, environment names, validation, secret masking, the type of the loaded configuration
// (`AppConfig`), the configuration categories over HTTP and the generated reference
// (docs/configuration.md) all come from here. Its defaults equal the shipped config/appsettings.json.
import { BYTES_PER_TOKEN, PER_TOKEN_TEXT } from '../message-cost.js';
import { OPUS_CHANNEL_COUNTS, OPUS_SAMPLE_RATES } from '../opus-format.js';
import { formatTimeSpan, TIME_SPAN_FORMATS } from './timespan.js';

/** The longest a token may live, device or admin (ten years): past it a token is as good as permanent. */
export const MAX_TOKEN_LIFETIME = '3650.00:00:00';

/** The subset of JSON Schema (draft-07) used here, plus two extension keywords (see below). */
export interface SchemaNode {
  type?: 'object' | 'string' | 'integer' | 'boolean' | 'array';
  description?: string;
  default?: unknown;
  properties?: Record<string, SchemaNode>;
  /** A schema here makes the object a map whose keys are names, not paths (Logging.LogLevel). */
  additionalProperties?: boolean | SchemaNode;
  items?: SchemaNode;
  maxItems?: number;
  uniqueItems?: boolean;
  enum?: readonly (string | number)[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  /** Secrets: accepted as input, never shown (JSON Schema's own meaning of writeOnly). */
  writeOnly?: boolean;
  /**
   * Extension: the value may carry credentials in part (a URL's user info and query), so it is shown
   * only in its public form (shown.ts); `host`: a host name or address, which holds none once it matches
   * its pattern, and is not shown where it does not.
   */
  'x-public-form'?: 'url' | 'host';
  /** Extension: the value is a .NET time span between these bounds (inclusive). */
  'x-timespan'?: TimeSpanBounds;
  /** Extension: what a valid value looks like, in words; ends every problem line about this key. */
  'x-expected'?: string;
  /**
   * A map's most names in one file, refused as the file is read: a file of half a million log categories
   * took 900 MB and 8 s to read. Not a validation keyword: the defaults' own names are not counted.
   */
  'x-max-names'?: number;
}

export interface TimeSpanBounds {
  readonly minimum: string;
  readonly maximum: string;
}

// The helpers below keep the literal `type`, `enum` and `x-timespan` of each key in its TypeScript type:
// schema-value.ts reads the type of a configuration value from them.
type Leaf<T extends SchemaNode['type']> = SchemaNode & { readonly type: T };
/** Keywords a helper's caller may add; the type and default are the helper's. */
type Extra = Omit<SchemaNode, 'type' | 'default' | 'enum' | 'x-timespan'>;

export const LOG_LEVELS = ['Trace', 'Debug', 'Information', 'Warning', 'Error', 'Critical', 'None'] as const;
/** Node's timers overflow past 2^31-1 ms (about 24.8 days) and then fire at once. */
const TIMER_MAX = formatTimeSpan(2 ** 31 - 1);
const MIB = 1024 * 1024;

const str = (def: string, description: string, extra: Extra = {}): Leaf<'string'> => ({
  type: 'string',
  default: def,
  description,
  'x-expected': extra.minLength ? 'must be a non-empty string' : 'must be a string',
  ...extra,
});
const secret = (description: string, extra: Extra = {}): Leaf<'string'> => str('', description, { writeOnly: true, ...extra });

/**
 * A key sent in an HTTP header (`X-API-Key`, the upstream's `Authorization: Bearer`) must arrive as it is
 * written: a header value loses its leading and trailing spaces (RFC 9110 section 5.5), control
 * characters are refused, and other than ASCII Kestrel refuses, uWS drops from a value's end and Node's
 * HTTP client will not send. A key outside this started the service and then never matched, or failed
 * every upstream connection.
 */
const HEADER_TEXT = '[!-~](?:[\\t !-~]*[!-~])?';
const HEADER_TEXT_EXPECTED = 'printable ASCII (spaces and tabs only inside it), as an HTTP header carries it';
const bool = (def: boolean, description: string): Leaf<'boolean'> => ({
  type: 'boolean',
  default: def,
  description,
  'x-expected': 'must be true or false',
});
const int = (def: number, minimum: number, maximum: number, description: string): Leaf<'integer'> => ({
  type: 'integer',
  default: def,
  minimum,
  maximum,
  description,
  'x-expected': `must be an integer from ${minimum} to ${maximum}`,
});
const oneOfInts = <const V extends readonly number[]>(def: V[number], values: V, description: string): Leaf<'integer'> & { readonly enum: V } => ({
  type: 'integer',
  default: def,
  enum: values,
  description,
  'x-expected': `must be one of ${values.join(', ')}`,
});
const timeSpan = (def: string, minimum: string, maximum: string, description: string): Leaf<'string'> & { readonly 'x-timespan': TimeSpanBounds } => ({
  type: 'string',
  default: def,
  'x-timespan': { minimum, maximum },
  description,
  'x-expected': `must be a time span ${TIME_SPAN_FORMATS} from ${minimum} to ${maximum}`,
});
const logLevel = (def: string | undefined, description: string): Leaf<'string'> & { readonly enum: typeof LOG_LEVELS } => ({
  type: 'string',
  ...(def === undefined ? {} : { default: def }),
  enum: LOG_LEVELS,
  description,
  'x-expected': `must be one of ${LOG_LEVELS.join(', ')} (any case)`,
});
/**
 * What MQTT forbids in its UTF-8 strings (topic names, user name, client id), or lets the receiver close
 * the connection for (MQTT 3.1.1 section 1.5.3, 5.0 section 1.5.4): U+0000 and unpaired surrogates must
 * not appear; the other control characters (U+0001 to U+001F, U+007F to U+009F) and Unicode
 * non-characters should not, and mosquitto closes the connection for each of them (a tab included). A
 * setting with one would have every connection refused, logged only as "connection closed". The body of
 * a character class, for patterns with the `u` flag (ajv's).
 */
export const NOT_IN_MQTT_TEXT = '\\p{Cc}\\p{Cs}\\p{Noncharacter_Code_Point}';
/**
 * Characters of an MQTT setting, at most. MQTT writes each string with a 16-bit length (65,535 bytes at
 * most: MQTT 3.1.1 section 1.5.3), and mqtt.js throws from deep in its packet writer for a longer one,
 * which ended the service at its first connect. Far below that: a topic is a prefix and a device id
 * percent-encoded (12 bytes a character at most), so every topic stays within MQTT's limit.
 */
const MQTT_PREFIX_MAX_CHARS = 1024;
/** The user name a category PUT accepted from the start; also the configuration's. */
const MQTT_USER_NAME_MAX_CHARS = 256;
/** 65,535 bytes of UTF-8 hold this many characters of up to 4 bytes each. */
const MQTT_PASSWORD_MAX_CHARS = 16_383;

const mqttText = (description: string): Leaf<'string'> =>
  str('', description, {
    maxLength: MQTT_USER_NAME_MAX_CHARS,
    pattern: `^[^${NOT_IN_MQTT_TEXT}]*$`,
    'x-expected': 'must be a string without control characters (U+0000 to U+001F, U+007F to U+009F) or Unicode non-characters, which MQTT does not allow',
  });
const mqttPrefix = (def: string, description: string): Leaf<'string'> =>
  str(def, description, {
    minLength: 1,
    maxLength: MQTT_PREFIX_MAX_CHARS,
    // Wildcards and a leading or trailing slash would make every topic under it wrong; a leading $ makes
    // them the broker's own (MQTT 4.7.2: `$SYS/...`), which brokers refuse to clients without a word back.
    pattern: `^[^$#+/${NOT_IN_MQTT_TEXT}](?:[^#+${NOT_IN_MQTT_TEXT}]*[^#+/${NOT_IN_MQTT_TEXT}])?$`,
    'x-expected': 'must be a non-empty MQTT topic prefix without +, #, a leading $, a leading or trailing /, control characters or Unicode non-characters',
  });

/**
 * A host name, an IPv4 address or an IPv6 address (at least two colons, a zone after `%`), or nothing:
 * what Mqtt.BrokerAddress and Server.Host may be. No user info, port, path or brackets can hide in it.
 * A name is labels of 1 to 63 characters between single dots (one after the last allowed), 253 at most
 * without it, as DNS takes them: `broker..lan` or `.` could only fail at each connection attempt.
 */
export const HOST_PATTERN = '^(?:(?=.{1,253}\\.?$)[A-Za-z0-9_-]{1,63}(?:\\.[A-Za-z0-9_-]{1,63})*\\.?|[0-9A-Fa-f.]*:[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*(?:%[A-Za-z0-9._-]+)?)?$';

/** How an array is given, said in the description of each (layers.ts, setIndexed). */
const ARRAY_SOURCES =
  ' The highest source that gives any item gives the whole array: items by index (`__0`, `.0`) in index order, gaps closed up, ' +
  'replacing a lower source\'s array instead of overriding its items one by one as ASP.NET Core does. ' +
  'Flags give it whole (the flag repeated) or by index, not both; an index given twice is refused.';

export const CONFIG_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'voice-hub configuration (appsettings.json)',
  type: 'object',
  additionalProperties: false,
  properties: {
    Logging: {
      type: 'object',
      description: 'Logging settings, as in ASP.NET Core.',
      additionalProperties: false,
      properties: {
        LogLevel: {
          type: 'object',
          description: 'Minimum level per log category; `Default` applies to categories not listed. Keys are category names (they may contain dots), not paths.',
          properties: {
            Default: logLevel('Information', 'Minimum log level of every log category not given a level of its own.'),
            'Microsoft.AspNetCore': logLevel('Warning', 'Level of the per-request access log (method, path, status, duration); Information turns it on.'),
          },
          additionalProperties: logLevel(undefined, 'Minimum log level of the log category named by the key (such as `Hub`, `Upstream`, `Mqtt`, `Storage`, `Http`, `App`); a category not listed follows `Default`.'),
          'x-max-names': 1000,
        },
      },
    },
    AllowedHosts: str('*', 'Host names requests may name in their Host header, `;`-separated: names (Unicode ones too), `*.example.com` wildcards, IPv4 and IPv6 addresses; a port is ignored; `*` allows any (ASP.NET Core host filtering). Requests naming another host get 400 (API and hub). An entry no Host header could match (`http://pi.local`, `pi.local/`) is refused, where ASP.NET Core would keep it and match nothing. Which browser origins may call is `Cors.AllowedOrigins`.', {
      format: 'allowed-hosts',
      'x-expected': 'must be `*` or `;`-separated host names as a Host header names them (`pi.local`, `*.example.com`, `192.168.1.20`, `fe80::1`), without a scheme or a path',
    }),
    VoiceService: {
      type: 'object',
      description: 'The upstream voice server and voice sessions.',
      additionalProperties: false,
      properties: {
        ServerUrl: str('ws://127.0.0.1:5050/voice', 'Upstream voice server; the default is the built-in echo server (`voice-hub echo-server`). A link-local server is named with its interface as RFC 6874 writes it (`ws://[fe80::1%25eth0]:5050/voice`). Shown (in `/health`, session records, `config check`, problem lines and a quoted command line) as scheme, host, port and path at most: a key may be given in its user info or query.', {
          format: 'ws-url',
          'x-public-form': 'url',
          'x-expected': 'must be a ws:// or wss:// URL without a fragment',
        }),
        ApiKey: secret('Key for the upstream voice server, sent as `Authorization: Bearer`.', {
          pattern: `^(?:${HEADER_TEXT})?$`,
          'x-expected': `must be empty or ${HEADER_TEXT_EXPECTED}`,
        }),
        EnableVoice: bool(true, 'Voice features on or off. Off: `POST /api/voice/start` and `/api/voice/message` answer 503, `/api/voice/stop` still ends a session, and `/health` does not probe the voice server. Switching it off (`PUT /api/config/voice`) refuses a start still connecting to the voice server (503) and ends no session: a running one keeps its upstream link, its device\'s audio over the hub and the upstream\'s answers go on until it is stopped or idles out.'),
        AudioSampleRate: oneOfInts(16000, OPUS_SAMPLE_RATES, 'Audio sample rate in Hz of a voice session that does not name one.'),
        AudioChannels: oneOfInts(1, OPUS_CHANNEL_COUNTS, 'Audio channel count of a voice session that does not name one.'),
        ConnectTimeout: timeSpan('00:00:05', '00:00:00.0010000', TIMER_MAX, 'How long a session start waits for the upstream connection; after that it fails with 502.'),
        SessionIdleTimeout: timeSpan('00:05:00', '00:00:00.0010000', TIMER_MAX, 'A session with no traffic either way for this long is stopped.'),
        DeviceReconnectGracePeriod: timeSpan('00:00:30', '00:00:00', TIMER_MAX, 'A session whose device joined it on the hub and then lost every connection keeps its upstream link this long for the device to reconnect and call JoinSession again (it resumes the same session); then it ends (SessionEnded, MQTT `ended` with the reason). 0 ends it as soon as the last connection is gone.'),
        RequireDeviceToken: bool(true, 'Whether /api/voice/* needs a device token of the session\'s device (or an admin token).'),
        CaFile: str('', 'PEM file of extra CA certificates to trust for a `wss://` ServerUrl with a private CA (the system CAs stay trusted); empty: system CAs only.'),
        // Budgets that keep a misbehaving upstream from costing unbounded work, memory or reconnects.
        DecodeQueuePackets: int(32, 1, 10_000, 'Upstream frames one session holds while its Opus decoder is rebuilt for a new sampleRate/channels; more are dropped, counted and reported to the session group once per burst.'),
        DecodeQueueBytes: int(262_144, 1024, 64 * MIB, 'Bytes of upstream frames one session holds while its decoder is rebuilt (more are dropped like DecodeQueuePackets), and waiting behind its packets on a decoder thread at which it stops reading upstream until they are well under it.'),
        DecoderThreads: int(-1, -1, 64, 'Threads that decode upstream Opus audio off the event loop, each session pinned to one; 0 decodes on the event loop (best on a single-core board); -1 picks one per core beyond the first (none on a single core).'),
        OpusLibrary: str('libopus.so.0', 'The system libopus that decodes upstream Opus audio (a name the dynamic loader finds, or a path): about 30 % less CPU per packet than the bundled wasm libopus on x64 (more on ARM, where it uses NEON), and decoder threads of its own that cost far less to hand packets to. Empty: always the bundled wasm libopus. When it cannot be loaded, the log says why and the bundled one decodes.'),
        DecoderQueuePerThread: int(32_768, 1, 1_000_000, 'Packets one decoder thread holds before it refuses more, and frames one session may have waiting behind packets being decoded; more are dropped, counted and reported to the session group once per burst, like DecodeQueuePackets.'),
        DecoderRebuildsPerSecond: int(4, 1, 1000, 'How often per second upstream audio may change sampleRate/channels (each change rebuilds the decoder); audio in a format that would need one more is dropped and counted.'),
        ReconnectAttempts: int(3, 0, 1000, 'Failed upstream reconnect attempts within ReconnectWindow, or in a row while the connection stays lost however long that takes, that end the session as Failed (SessionEnded with the reason); 0: a lost connection ends the session at once.'),
        ReconnectWindow: timeSpan('00:01:00', '00:00:00.0010000', TIMER_MAX, 'The window over which failed reconnect attempts are counted (those of an outage still in progress count however long ago they were).'),
        ReconnectDelay: timeSpan('00:00:00.2500000', '00:00:00.0010000', '00:10:00', 'Back-off before the first reconnect attempt; it doubles with each failure in the window (with random jitter) up to ReconnectMaxDelay.'),
        ReconnectMaxDelay: timeSpan('00:00:10', '00:00:00.0010000', '01:00:00', 'Longest back-off between reconnect attempts.'),
        ReconnectStableAfter: timeSpan('00:00:10', '00:00:00.0010000', TIMER_MAX, 'A reconnected upstream connection that drops sooner than this counts as a failed attempt: it did not prove stable.'),
      },
    },
    DeviceManagement: {
      type: 'object',
      description: 'Device registration and tokens.',
      additionalProperties: false,
      properties: {
        AllowDeviceRegistration: bool(true, 'Whether devices may register.'),
        MaxDevices: int(10, 0, 100_000, 'Maximum number of registered devices; registration beyond it gets 409, and deleting a device frees its place once the deletion is answered (200).'),
        TokenExpiration: timeSpan('24:00:00', '00:00:01', MAX_TOKEN_LIFETIME, 'Lifetime of a device token.'),
      },
    },
    Mqtt: {
      type: 'object',
      description: 'MQTT broker and topics.',
      additionalProperties: false,
      properties: {
        BrokerAddress: str('localhost', 'MQTT broker host name or address; an empty address in the configuration switches MQTT off.', {
          // A host and nothing else: a URL (`mqtt://user:password@host`) never connects, and its credentials would be
          // shown wherever the address is (logs, /health, the mqtt settings category, which devices may read).
          pattern: HOST_PATTERN,
          'x-public-form': 'host',
          'x-expected': 'must be a host name, an IPv4 address or an IPv6 address without brackets (no scheme, user name, password, port or path: the port is Mqtt.Port, the login Mqtt.Username and Mqtt.Password)',
        }),
        Port: int(1883, 1, 65_535, 'MQTT broker port.'),
        Username: mqttText('MQTT user name; empty for none.'),
        Password: secret('MQTT password; empty for none.', { maxLength: MQTT_PASSWORD_MAX_CHARS }),
        TopicPrefix: mqttPrefix('voice-hub', 'Prefix of every topic the service publishes: `<prefix>/status`, `<prefix>/hub/state`, `<prefix>/devices/<deviceId>/state`, `<prefix>/sessions/<sessionId>/event`. Hubs sharing a broker need different prefixes to keep their status and state apart (their client ids and Home Assistant entities differ anyway).'),
        HomeAssistantDiscovery: bool(true, 'Publish Home Assistant MQTT discovery configs: the hub as a device (version, active sessions, devices online, upstream) and battery, temperature, memory, CPU and status of each device.'),
        DiscoveryPrefix: mqttPrefix('homeassistant', 'Home Assistant discovery prefix.'),
      },
    },
    ApiKeys: {
      type: 'array',
      default: [],
      items: {
        type: 'string',
        // Non-empty by the pattern alone: one error per bad item, not two (a file may hold 200,000).
        pattern: `^${HEADER_TEXT}$`,
        'x-expected': `must be a non-empty string of ${HEADER_TEXT_EXPECTED}`,
      },
      writeOnly: true,
      description: 'Accepted values of the `X-API-Key` header, which registration and the voice endpoints then require; empty: no key needed.' + ARRAY_SOURCES,
      'x-expected': 'must be an array of non-empty strings',
    },
    Cors: {
      type: 'object',
      description: 'Browser pages on other origins (cross-origin resource sharing).',
      additionalProperties: false,
      properties: {
        AllowedOrigins: {
          type: 'array',
          default: [],
          maxItems: 100,
          items: { type: 'string', format: 'origin', 'x-expected': 'must be an origin as a browser sends it: `http://` or `https://`, a host (no `*` wildcards), an optional port, no path' },
          description:
            'Origins (`http://dashboard.local:8080`) whose pages may call the API, `/health` and the hub (negotiate and WebSocket), with credentials; ' +
            'no `*`: each origin is named. Empty: no cross-origin access; pages served by this service itself are never cross-origin.' +
            ARRAY_SOURCES,
          'x-expected': 'must be an array of origins',
        },
      },
    },
    Server: {
      type: 'object',
      description: 'The HTTP and HTTPS listeners (API and hub).',
      additionalProperties: false,
      properties: {
        // A host and nothing else: `[::1]` or `127.0.0.1:5000` passed the check and failed at start as a
        // host name that does not resolve, blamed on the data directory (exit 1, retried by the unit).
        Host: str('0.0.0.0', 'Address to listen on: an IPv4 or IPv6 address (0.0.0.0 or :: for all), or a host name.', {
          minLength: 1,
          pattern: HOST_PATTERN,
          'x-expected': 'must be an IPv4 address, an IPv6 address without brackets, or a host name (no port: that is Server.Port)',
        }),
        Port: int(5000, 0, 65_535, 'Port to listen on; 0 lets the system choose. Browsers and JavaScript clients (fetch, so the official SignalR client too) refuse the ports of other protocols (6000, 6665-6669, 5060, 10080, ...): pages such as Swagger UI cannot reach a service there; `voice-hub health` and `simulate` can.'),
        HttpsPort: int(5001, 0, 65_535, 'HTTPS port, used only when Server.Certificate.Path is set; 0 lets the system choose.'),
        Certificate: {
          type: 'object',
          description: 'The HTTPS certificate, PEM files as Kestrel\'s `Certificates:Default:Path/KeyPath`. HTTPS is off while Path is empty.',
          additionalProperties: false,
          properties: {
            Path: str('', 'PEM certificate (chain) file for HTTPS; empty: no HTTPS listener.'),
            KeyPath: str('', 'PEM private key file (unencrypted) of the certificate; empty: the key is read from Path.'),
          },
        },
        HttpsRedirect: bool(false, 'Plain HTTP answers 308 to the same URL on the HTTPS port (not /health); needs a certificate.'),
        MaxBodyBytes: int(65_536, 1, 100 * MIB, 'Largest accepted HTTP request body, in bytes (larger: 413).'),
      },
    },
    Storage: {
      type: 'object',
      description: 'Where state is kept.',
      additionalProperties: false,
      properties: {
        DataDir: str('./data', 'Folder of the database and the generated signing key (`/var/lib/voice-hub` under systemd).', { minLength: 1 }),
        FlushInterval: timeSpan('00:00:05', '00:00:00.0010000', TIMER_MAX, 'Telemetry (status, metrics, lastSeen, and the audioPacketsSent of running sessions) is written to disk at most this often.'),
        SessionHistory: int(100, 0, 100_000, 'Ended voice sessions kept in the database (those that ended first go first, in the order they ended, not by their clock time); every write rewrites the file, so a long history costs SD-card writes.'),
        MaxDatabaseBytes: int(128 * MIB, 64 * 1024, 2 ** 31 - 1, 'Largest size of the database file: a write that would make it larger (a registration, a session) is refused with 503 `storage is full`. The whole file is held in memory (the RSS peaks at about 4.5 times its size while it is written) and read whole at every start, which cannot read one past 2 GiB - 1.'),
        MinFreeBytes: int(64 * MIB, 0, 1024 * 1024 * MIB, 'Free space in the data dir below which /health reports the database Degraded, before writes fail (0: not checked).'),
      },
    },
    Auth: {
      type: 'object',
      description: 'Token signing.',
      additionalProperties: false,
      properties: {
        SigningKey: secret('HS256 key for device and admin tokens; empty: generated on first start and kept in the data dir (mode 0600).', {
          pattern: '^$|^[\\s\\S]{32,}$',
          'x-expected': 'must be empty (a key is generated) or at least 32 characters',
        }),
      },
    },
    Hub: {
      type: 'object',
      description: 'The SignalR hub at /voice-hub.',
      additionalProperties: false,
      properties: {
        MaximumReceiveMessageSize: int(65_536, 1, 100 * MIB, 'Largest hub message accepted, in bytes; larger closes the connection with an error.'),
        // Each connection costs about 3 KiB of the service's memory and more of the kernel's, and one may
        // stay anonymous for as long as it pings (JoinSession carries the token): without a bound, one LAN
        // host opening connection after connection took memory and, at the file-descriptor limit, the event
        // loop. Ten thousand is twenty times the most devices the benchmark streams, about 30 MiB.
        MaximumConnections: int(10_000, 1, 1_000_000, 'Hub connections held at once (those waiting for a stateful reconnect included); a WebSocket upgrade beyond it is refused with 503 and Retry-After.'),
        // So that one host cannot take all of those places (twenty hosts are needed now): a device holds
        // one connection, a dashboard a few, and `voice-hub simulate` at its most (500 devices) fits.
        MaximumConnectionsPerAddress: int(512, 0, 1_000_000, 'Hub connections one client address may hold at once (an IPv6 client: its /64 prefix), upgrades being authenticated included; a WebSocket upgrade beyond it is refused with 429 and Retry-After. 0: no limit (behind a reverse proxy every client has the proxy\'s address).'),
        // Each connection may leave 1 MiB unread before it is closed as too slow; 500 connections of one
        // device token that never read held 170 MB of a 1 GB Pi that way. Voice fan-out to 300 members
        // each 64 KiB behind (ASP.NET Core's pause threshold) is 19 MiB: well inside the default.
        MaximumUnsentBytes: int(32 * MIB, 64 * 1024, 1024 * MIB, 'Bytes waiting to be sent to all hub connections together (queued because their clients read slowly); while more wait, a connection with more than 64 KiB of them is closed as too slow (`client too slow to receive messages.`) at its next message, whatever its own limit (1 MiB).'),
        KeepAliveInterval: timeSpan('00:00:15', '00:00:00.0010000', TIMER_MAX, 'A ping is sent when nothing else was sent for this long.'),
        ClientTimeout: timeSpan('00:00:30', '00:00:00.0010000', TIMER_MAX, 'A client that sent nothing for this long is disconnected, once it has sent a ping: as in ASP.NET Core the timeout starts with its first ping, so a client that never pings (older clients, simple firmware) is kept while it listens; the WebSocket layer ends a socket that delivered nothing for 16 minutes (unless this is over 940 s).'),
        // Budgets per connection: a frame of millions of tiny messages must not cost memory or
        // event-loop time beyond these. Sized from legitimate traffic: 200 SendAudioData of the
        // largest 20 ms Opus packet (1,275 B) are 358 KB in JSON and 267 KB in MessagePack, of a
        // 16 kHz speech packet (at most ~100 B) 43 KB and 31 KB; a device sends 50 packets a second.
        MaximumFrameSize: int(262_144, 1024, 16 * MIB, 'Largest WebSocket frame after the handshake, in bytes (never less than MaximumReceiveMessageSize); a larger one drops the connection before it is read (no close frame: the client sees 1006). Before the handshake is done the request itself may take 1 KiB; messages after it in its frame are read as any others.'),
        MessagesPerTurn: int(32, 1, 10_000, 'Messages read from one connection before the event loop serves others (fewer once they make 64 KiB); the rest of a frame waits for the next turn.'),
        // A message counts once per 4 KiB begun (src/message-cost.ts): every audio packet counts once, and
        // a client cannot buy costly decoding with a few large messages.
        MessageRate: int(500, 1, 1_000_000, `Messages per second a connection may send once authenticated (a token on the connection, or JoinSession accepted), ${PER_TOKEN_TEXT}; over its burst it is closed with an error.`),
        MessageBurst: int(2000, 1, 1_000_000, `Messages an authenticated connection may send at once, ${PER_TOKEN_TEXT} (what a client flushes after a stall of up to 40 s of 20 ms audio, each packet under ${BYTES_PER_TOKEN / 1024} KiB).`),
        UnauthenticatedMessageRate: int(10, 1, 1_000_000, `Messages per second a connection may send before it authenticated, ${PER_TOKEN_TEXT}.`),
        UnauthenticatedMessageBurst: int(64, 1, 1_000_000, `Messages a connection may send at once before it authenticated, ${PER_TOKEN_TEXT}.`),
        // Every new connection starts with a full burst of its own, so a client that kept reconnecting
        // escaped it: 8 loops opening connections and sending each burst as 59 KB objects of 6,000 names
        // (about 1 ms of CPU per 4 KiB token, the costliest shape to decode) took 3-4 s of CPU in 10 s and
        // /health answered in 0.8-1.2 s. An anonymous device sends one message (JoinSession; the handshake
        // is not charged): the burst lets every connection one address may hold
        // (MaximumConnectionsPerAddress) join at once, and the rate keeps as many anonymous connections
        // pinging every 15 s (34 a second), while the decoding a reconnecting client can buy stays ~5 % of a core.
        UnauthenticatedAddressMessageRate: int(50, 0, 1_000_000, `Messages per second the connections of one client address (an IPv6 client: its /64 prefix) may send together before they authenticated, ${PER_TOKEN_TEXT}; the budget outlives the connections, so reconnecting does not renew it, and a connection that finds it spent is closed with an error. 0: no budget per address (behind a reverse proxy every client has the proxy's address).`),
        UnauthenticatedAddressMessageBurst: int(512, 0, 1_000_000, `Messages the connections of one client address may send at once before they authenticated, ${PER_TOKEN_TEXT}. 0: no budget per address.`),
        // SignalR's stateful reconnect, named and defaulted as in ASP.NET Core (HttpConnectionDispatcherOptions,
        // HubOptions, ConnectionOptions), but on: devices on Wi-Fi are who it is for, and clients opt in too.
        AllowStatefulReconnects: bool(true, 'Offer stateful reconnect to clients that ask for it (`withStatefulReconnect()`): a dropped connection keeps its groups and resumes where it was, nothing lost or repeated in either direction.'),
        StatefulReconnectBufferSize: int(100_000, 1024, 16 * MIB, 'Bytes of sent messages a stateful connection keeps until the client acknowledges them; while more than this is unacknowledged further messages wait (up to 1 MiB, then the connection ends).'),
        DisconnectTimeout: timeSpan('00:00:15', '00:00:00.1000000', '01:00:00', 'How long a stateful connection whose socket dropped waits for its client to reconnect; then it ends and a reconnect gets 404.'),
      },
    },
  },
} as const satisfies SchemaNode & { $schema: string; title: string };
