// The prose of the OpenAPI document (Markdown, which Swagger UI renders): how to authenticate, the error
// format, and the SignalR hub at /voice-hub, which is no HTTP operation and so is described here in
// words; its events table is generated from the hub's event map, as the bridge that sends them uses it.
import { HUB_EVENTS, hubEventNames, hubSchemaName } from '../hub-events.js';
import { MAX_HEADER_FIELDS_BYTES, MAX_REQUEST_TARGET_BYTES } from '../../http/framing.js';

export interface DescriptionOptions {
  apiKeysEnabled: boolean;
  requireDeviceToken: boolean;
  /** `Hub.AllowStatefulReconnects`. */
  statefulReconnect: boolean;
  hub: HubFigures;
}

/**
 * The hub settings the description quotes, as this server has them (time spans in ms, sizes in bytes):
 * the document describes the server that serves it, so a changed setting is not shown as its default.
 */
export interface HubFigures {
  readonly KeepAliveInterval: number;
  readonly ClientTimeout: number;
  readonly MaximumReceiveMessageSize: number;
  readonly DisconnectTimeout: number;
}

/** A time span of the configuration in words: `15 s`, `0.25 s`. */
const seconds = (ms: number): string => `${Number((ms / 1000).toFixed(3))} s`;

export function apiDescription(opts: DescriptionOptions): string {
  return [
    'Backend for voice-assistant devices: registration and status of devices, voice sessions relayed to an',
    'upstream voice server, configuration by category, health. JSON in and out. The real-time audio goes',
    'through the SignalR hub at `/voice-hub`, described below. A request property a schema does not require may',
    'be `null`, read as if it were absent (its default applies), unless its schema gives `null` a meaning.',
    '',
    '## Authentication',
    '- **Device token**: `POST /api/device/register` answers `deviceToken`, a JWT (HS256). Send it as',
    '  `Authorization: Bearer <deviceToken>`. It lives `DeviceManagement.TokenExpiration` (24 hours as shipped);',
    '  exchange a still-valid one for a fresh one with `POST /api/device/{deviceId}/token`. A device token only',
    "  acts for its own device. Deleting the device revokes its tokens.",
    '- **Admin token**: never handed out over HTTP. Mint one on the box with `voice-hub token admin`',
    '  (`--ttl 30d` for another lifetime; under systemd:',
    '  `sudo -u voice-hub voice-hub token admin --config /etc/voice-hub/appsettings.json`).',
    '  Needed by `GET /api/device/list`, `DELETE /api/device/{deviceId}` and `PUT /api/config/{category}`;',
    '  accepted wherever a device token is.',
    '- **X-API-Key**: applies only when `ApiKeys` is configured (non-empty); then registration and the voice',
    '  endpoints need the header `X-API-Key` with one of those keys, and a missing or unknown key is answered',
    '  401 with the plain-text body `Invalid API Key`.',
    `  **On this server ApiKeys is ${opts.apiKeysEnabled ? 'configured: the key is required' : 'empty: no key is needed'}.**`,
    `- The voice endpoints need a device token while \`VoiceService.RequireDeviceToken\` is true (the default;`,
    `  **on this server it is ${opts.requireDeviceToken ? 'on' : 'off'}**).`,
    '',
    'In this page, **Authorize** sets the token and the key for **Try it out**.',
    '',
    '## Errors',
    'Errors are RFC 7807 `application/problem+json` bodies `{type, title, status, detail, traceId}`, as ASP.NET',
    'Core writes them; validation errors add `errors: {field: [messages]}`. The one exception is the API-key 401',
    '(plain text). Besides the codes listed per operation: 400 for a path that is not valid percent-encoding,',
    '404 for an unknown path, 405 (with `Allow`) for a wrong method, 413 for a body over `Server.MaxBodyBytes`,',
    `415 for a body that is not JSON, 414 for a request target over ${MAX_REQUEST_TARGET_BYTES} bytes and 431 for header fields`,
    `over ${MAX_HEADER_FIELDS_BYTES} bytes in all (as problem bodies; the Node 24 builds' HTTP layer answers 431 itself, with no`,
    'problem body, to any request head over 4096 bytes, so there these two limits are never reached).',
    '',
    ...hubDescription(opts.statefulReconnect, opts.hub),
  ].join('\n');
}

function hubDescription(statefulReconnect: boolean, hub: HubFigures): string[] {
  return [
    '## Real-time hub at `/voice-hub` (ASP.NET Core SignalR)',
    'The hub speaks the SignalR protocol, so the official clients work unchanged: `@microsoft/signalr`',
    '(JavaScript), `Microsoft.AspNetCore.SignalR.Client` (.NET), `signalrcore` (Python). Point them at',
    '`http://<host>:<port>/voice-hub` (`Server.Port`, 5000 as shipped); `POST /api/voice/start` answers the address as `websocketUrl`.',
    '',
    '**Connecting**',
    '1. Negotiate: `POST /voice-hub/negotiate?negotiateVersion=1` answers',
    '   `{negotiateVersion: 1, connectionId, connectionToken, availableTransports: [{transport: "WebSockets",',
    '   transferFormats: ["Text", "Binary"]}]}`. Without `negotiateVersion` (version 0) there is no',
    '   `connectionToken` and the `connectionId` is the id.',
    '2. Open the WebSocket `ws://<host>:<port>/voice-hub?id=<connectionToken>` (`wss://` behind TLS). An unknown or',
    '   expired id is refused with 404, a second socket on one id with 409 (except a stateful reconnect, below). Clients may skip negotiation',
    '   (`skipNegotiation`) and open `ws://<host>:<port>/voice-hub` directly.',
    '3. Send the handshake `{"protocol":"json","version":1}` followed by the record separator 0x1E, within 15 s.',
    '',
    'Transports: WebSockets only (no Server-Sent Events, no long polling). Protocols:',
    '`json` (text frames, Base64 for audio) and `messagepack` (binary frames, audio as raw bytes).',
    'A token on the connection is optional (`access_token` query parameter or `Authorization: Bearer`); when',
    'given it must be valid. The device token that counts is the one `JoinSession` carries.',
    `The server pings after \`Hub.KeepAliveInterval\` (${seconds(hub.KeepAliveInterval)}) without traffic. A client that has pinged and then sends`,
    `nothing for \`Hub.ClientTimeout\` (${seconds(hub.ClientTimeout)}) is closed with an error; as in ASP.NET Core the timeout starts with the`,
    `client's first ping, so one that never pings is kept while it listens. A message larger than`,
    `\`Hub.MaximumReceiveMessageSize\` (${hub.MaximumReceiveMessageSize} bytes) closes the connection with an error.`,
    '',
    '**Stateful reconnect** (`withStatefulReconnect()`; negotiate with `useStatefulReconnect=true`, handshake',
    `\`"version":2\`): a connection whose socket drops waits \`Hub.DisconnectTimeout\` (${seconds(hub.DisconnectTimeout)}) for its client, keeps`,
    'its groups, and neither side loses or repeats a message. The reconnect\'s socket takes the place of the old one, even one that',
    'still looks open; it must present the same user\'s token as the connection did (another user: 403; an invalid token, or none',
    'for a connection opened with one: 401). A client that stops acknowledging is closed once `Hub.StatefulReconnectBufferSize`',
    'bytes are unacknowledged and 1 MiB more waits behind them (`client too slow to receive messages.`). Controlled by `Hub.AllowStatefulReconnects`;',
    `**on this server it is ${statefulReconnect ? 'offered to clients that ask for it' : 'off: negotiate never offers it'}**.`,
    'Without it, a reconnect is a new connection: group membership does not survive it, call `JoinSession` again.',
    '',
    '**Methods** (the client invokes; names match case-insensitively)',
    '',
    '| method | arguments | what happens |',
    '|---|---|---|',
    '| `JoinSession` | `sessionId` (string), `deviceToken` (string) | token valid and of the session\'s device (or admin) and the session active: the connection joins the group `session-{sessionId}` and the caller gets `SessionJoined`; otherwise the caller gets `Error` and nothing else. Safe to repeat. |',
    '| `SendAudioData` | `sessionId` (string), `audio`: one Opus packet, Base64 text with `json`, bytes with `messagepack` | needs a joined session; the packet goes upstream and the group gets `AudioProcessed`; any failure (invalid Base64, not joined, session ended) gives the caller `Error` with the reason. |',
    '',
    '**Events** (the server sends)',
    '',
    '| event | to | when | payload (the one argument) |',
    '|---|---|---|---|',
    ...eventRows(),
    '',
    '**A session from start to end**: register the device; `POST /api/voice/start`; connect to the hub;',
    '`JoinSession(sessionId, deviceToken)` and wait for `SessionJoined`; `SendAudioData` for each Opus packet;',
    'receive `AudioResponse`/`AudioData`/`TextResponse`; `POST /api/voice/stop`, and the group gets `SessionEnded`.',
  ];
}

/** One table row per hub event, in the map's order. */
function eventRows(): string[] {
  return hubEventNames.map((name) => {
    const { to, when, schema } = HUB_EVENTS[name];
    const schemaName = hubSchemaName(name);
    const payload = schemaName
      ? `\`{${Object.keys(schema.properties as object).join(', ')}}\` (schema \`${schemaName}\`)`
      : `string. ${String(schema.description)}`;
    return `| \`${name}\` | ${to} | ${when} | ${payload} |`;
  });
}
