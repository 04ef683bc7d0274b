// Public API of the SignalR hub: attach it to a uWS app, register methods, talk to groups.
export { attachHub, type HubListener } from './uws-hub.js';
export type { HubAdmissionRequest, UwsHubOptions } from './uws-hub-context.js';
export { HubError } from './errors.js';
export type { CloseReason, HubCallContext, HubMethod, HubMethodEntry, HubOptions, VoiceHubServer } from './types.js';
export type { ProtocolName } from './messages.js';
export type { MessageBudget } from './rate-limit.js';
