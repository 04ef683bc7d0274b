// The events the hub sends to devices, in one typed map: SignalR target -> who receives it, the
// payload's TypeScript type and its JSON schema. The hub methods and the session bridge send through
// `toGroup`/`toCaller`, so a target name or payload shape cannot drift from what the API document says:
// its hub section and its `Hub*` schemas are generated from HUB_EVENTS.
import type { Base64Text } from '../hub/base64-text.js';
import type { HubCallContext, VoiceHubServer } from '../hub/index.js';

export interface HubEventPayloads {
  SessionJoined: string;
  Error: string;
  AudioProcessed: { sessionId: string; sequence: number; bytes: number; durationMs: number };
  /** Base64 text of the PCM (written without JSON's escape scan: hub/base64-text.ts). */
  AudioResponse: Base64Text;
  AudioData: { sessionId: string; format: 'opus'; sampleRate: number; channels: number; data: string };
  TextResponse: { sessionId: string; text: string; final: boolean };
  SessionEnded: { sessionId: string; reason: string };
}

export type HubEventName = keyof HubEventPayloads;

/** One event as it goes out: its target and its payload (the invocation's single argument). */
export type HubEvent = { [K in HubEventName]: { target: K; payload: HubEventPayloads[K] } }[HubEventName];

type JsonSchema = Record<string, unknown>;

export interface HubEventDoc {
  /** Who receives it, in the words of the event table. */
  readonly to: string;
  /** When it is sent. */
  readonly when: string;
  /** The payload's schema; an object payload is also published as the component `Hub<target>`. */
  readonly schema: JsonSchema;
}

const SESSION_GROUP_PREFIX = 'session-';
/** The group of a session's members: JoinSession puts a connection in it, session events go to it. */
export const sessionGroup = (sessionId: string): string => `${SESSION_GROUP_PREFIX}${sessionId}`;
/** The session id of a session group's name; undefined for any other group. */
export const sessionOfGroup = (group: string): string | undefined =>
  group.startsWith(SESSION_GROUP_PREFIX) ? group.slice(SESSION_GROUP_PREFIX.length) : undefined;

const GROUP = `group \`${sessionGroup('{sessionId}')}\``;
const str = (description: string): JsonSchema => ({ type: 'string', description });
const object = (properties: Record<string, JsonSchema>): JsonSchema => ({
  type: 'object',
  properties,
  required: Object.keys(properties),
  additionalProperties: false,
});
const sessionId = { type: 'string', description: 'The session the event belongs to.' };

/** In the order the documentation lists them. */
export const HUB_EVENTS: { readonly [K in HubEventName]: HubEventDoc } = {
  SessionJoined: {
    to: 'the caller',
    when: 'after a successful `JoinSession`',
    schema: str('The session id the caller joined.'),
  },
  Error: {
    to: `the caller; the ${GROUP}`,
    when: 'to the caller when its call failed; to the group when upstream reported an error, and when the service had to drop upstream frames (once per burst)',
    schema: str('What went wrong.'),
  },
  AudioProcessed: {
    to: `the ${GROUP}`,
    when: 'after each `SendAudioData`, once the packet has gone upstream',
    schema: object({
      sessionId,
      sequence: { type: 'integer', description: 'Number of the packet in the session, from 1.' },
      bytes: { type: 'integer', description: 'Size of the Opus packet forwarded upstream.' },
      durationMs: { type: 'number', description: 'Audio duration the packet carries.' },
    }),
  },
  AudioResponse: {
    to: `the ${GROUP}`,
    when: 'for each upstream audio message, ahead of its `AudioData`',
    schema: {
      type: 'string',
      format: 'byte',
      description: 'Base64 text (with either protocol) of the decoded upstream audio: 16-bit little-endian PCM, interleaved, ' +
        "at the sample rate and channel count the upstream message names (the session's where it names none).",
    },
  },
  AudioData: {
    to: `the ${GROUP}`,
    when: 'for each upstream audio message: the audio as received, still Opus',
    schema: object({
      sessionId,
      format: { type: 'string', enum: ['opus'] },
      sampleRate: { type: 'integer', example: 16000 },
      channels: { type: 'integer', example: 1 },
      data: { type: 'string', format: 'byte', description: 'Base64 of the Opus packet (with either protocol).' },
    }),
  },
  TextResponse: {
    to: `the ${GROUP}`,
    when: 'for each upstream text message',
    schema: object({
      sessionId,
      text: { type: 'string' },
      final: { type: 'boolean', description: 'As upstream sent it (false: a partial result); true when upstream left it out.' },
    }),
  },
  SessionEnded: {
    to: `the ${GROUP}`,
    when: 'when the session ends: stopped, replaced by a new session of its device, idle timeout, upstream failure or the device deleted',
    schema: object({ sessionId, reason: { type: 'string', example: 'stopped' } }),
  },
};

export const hubEventNames = Object.keys(HUB_EVENTS) as HubEventName[];

/** The component name of an event's payload schema, for object payloads. */
export const hubSchemaName = (target: HubEventName): string | undefined =>
  HUB_EVENTS[target].schema.type === 'object' ? `Hub${target}` : undefined;

/** Invokes `target` on every member of `group`. */
export function toGroup<K extends HubEventName>(hub: Pick<VoiceHubServer, 'sendToGroup'>, group: string, target: K, payload: HubEventPayloads[K]): void {
  hub.sendToGroup(group, target, payload);
}

/** Invokes `target` on the caller of a hub method only. */
export function toCaller<K extends HubEventName>(ctx: Pick<HubCallContext, 'sendToCaller'>, target: K, payload: HubEventPayloads[K]): void {
  ctx.sendToCaller(target, payload);
}
