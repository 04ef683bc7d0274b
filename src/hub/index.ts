// Public API of the SignalR hub: attach it to a uWS app, register methods, talk to groups.
export { attachHub, type HubAdmissionRequest, type HubListener, type UwsHubOptions } from './uws-hub.js';
export { HubError } from './errors.js';
export type { CloseReason, HubCallContext, HubMethod, HubMethodEntry, HubOptions, VoiceHubServer } from './types.js';
export type { ProtocolName } from './messages.js';
export type { MessageBudget } from './rate-limit.js';
