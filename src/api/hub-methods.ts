// The hub methods devices call: JoinSession checks the device token against the session's device;
// SendAudioData needs membership and forwards the audio upstream (the session then tells the group
// `AudioProcessed`, through the session bridge). Each throws coded domain errors for the caller's
// mistakes; hub-boundary.ts turns every failure into the caller's `Error` event.
import type { VerifyToken } from '../auth/verify.js';
import type { Principal } from '../auth/tokens.js';
import { decodeBase64 } from '../base64.js';
import { DomainError, isDomainError } from '../errors.js';
import type { HubCallContext, HubMethodEntry } from '../hub/index.js';
import type { Logger } from '../log/logger.js';
import type { AudioSent } from '../voice/session.js';
import { sessionNotFound } from '../voice/sessions.js';
import type { SessionRecord } from '../store/types.js';
import { reportingErrors } from './hub-boundary.js';
import { sessionGroup, sessionOfGroup, toCaller } from './hub-events.js';

export interface VoiceHubDeps {
  /** Verifies a device or admin token, including revocation; throws with the reason when invalid. */
  verifyToken: VerifyToken;
  getSession(sessionId: string): SessionRecord | undefined;
  /**
   * The connection joined the session: its events reach the device again. When the connection closes
   * the session waits for the device to come back (the hub tells the sessions, by connection id).
   */
  joined(sessionId: string, connectionId: string): void;
  /** Throws not_found for a session that does not exist, conflict for one that is not active. */
  sendAudio(sessionId: string, opus: Uint8Array): AudioSent;
  /** Where unexpected failures are logged, with their stack. */
  logger: Logger;
}

export function decodeAudioArgument(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  if (typeof value !== 'string') throw new DomainError('invalid_argument', 'audio must be Base64 text (JSON protocol) or bytes (MessagePack)');
  // The empty text is valid Base64 (of no bytes, as in .NET): the audio check refuses the empty packet,
  // whatever the protocol brought it as.
  const bytes = decodeBase64(value);
  if (!bytes) throw new DomainError('invalid_argument', 'audioDataBase64 is not valid Base64');
  return bytes;
}


export function voiceHubMethods(deps: VoiceHubDeps): Record<string, HubMethodEntry> {
  async function joinSession(ctx: HubCallContext, [sessionId, deviceToken]: unknown[]): Promise<void> {
    if (typeof sessionId !== 'string' || typeof deviceToken !== 'string') {
      throw new DomainError('invalid_argument', 'JoinSession expects (sessionId: string, deviceToken: string)');
    }
    let principal: Principal;
    try {
      principal = await deps.verifyToken(deviceToken);
    } catch (e) {
      // Only a refusal is the caller's: a failure of the check itself is a bug and reported as one.
      if (!isDomainError(e)) throw e;
      throw new DomainError('unauthenticated', `Invalid device token: ${e.message}`);
    }
    const session = deps.getSession(sessionId);
    if (!session) throw sessionNotFound(sessionId);
    if (principal.role !== 'admin' && principal.sub !== session.deviceId) {
      throw new DomainError('forbidden', `Invalid device token: it does not belong to the device of session '${sessionId}'`);
    }
    if (session.state !== 'Active') throw new DomainError('conflict', `session '${sessionId}' is ${session.state}`);
    leaveEndedSessions(ctx, sessionId);
    const group = sessionGroup(sessionId);
    ctx.joinGroup(group);
    // A connection that ended while its token was checked (a thread-pool job, a turn of the event loop
    // or more) joins nothing: its close was reported already, so a session it attached to would wait for
    // a release that never comes, taking it for the device's return and never ending for its absence.
    if (!ctx.isInGroup(group)) return;
    // The session is its device's: an admin's connection (a dashboard watching) is no presence of it, so
    // one closing never starts the grace period of a session driven over HTTP, nor holds one whose device left.
    if (principal.role !== 'admin') deps.joined(sessionId, ctx.connectionId);
    toCaller(ctx, 'SessionJoined', sessionId);
  }

  /**
   * A device may keep one hub connection open across many sessions. Session ids are never reused, so
   * the groups of its ended sessions would only pile up (one group and uWS topic per session, for the
   * life of the connection): found by test/hardening. Joining a session leaves them.
   */
  function leaveEndedSessions(ctx: HubCallContext, joining: string): void {
    for (const group of ctx.groups()) {
      const id = sessionOfGroup(group);
      if (id !== undefined && id !== joining && deps.getSession(id)?.state !== 'Active') ctx.leaveGroup(group);
    }
  }

  function sendAudioData(ctx: HubCallContext, [sessionId, audio]: unknown[]): void {
    if (typeof sessionId !== 'string') throw new DomainError('invalid_argument', 'SendAudioData expects (sessionId: string, audio)');
    // Membership first: it is a set lookup, where reading the session copies its record, and a member's
    // session exists (sendAudio refuses one that ended or is gone with the same errors).
    if (!ctx.isInGroup(sessionGroup(sessionId))) {
      if (!deps.getSession(sessionId)) throw sessionNotFound(sessionId);
      throw new DomainError('forbidden', `join session '${sessionId}' before sending audio to it`);
    }
    deps.sendAudio(sessionId, decodeAudioArgument(audio));
  }

  return {
    JoinSession: { handler: reportingErrors('JoinSession', joinSession, deps.logger), args: ['string', 'string'] },
    SendAudioData: { handler: reportingErrors('SendAudioData', sendAudioData, deps.logger), args: 2 },
  };
}
