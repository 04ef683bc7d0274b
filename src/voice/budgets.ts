// The per-session budgets against a misbehaving upstream, read from the VoiceService configuration
// section (the schema holds their defaults and ranges).
import type { AppConfig } from '../config/types.js';
import type { SessionBudgets } from './session.js';

export function sessionBudgets(voice: AppConfig['VoiceService']): SessionBudgets {
  return {
    decode: {
      queuePackets: voice.DecodeQueuePackets,
      queueBytes: voice.DecodeQueueBytes,
      rebuildsPerSecond: voice.DecoderRebuildsPerSecond,
    },
    reconnect: {
      attempts: voice.ReconnectAttempts,
      windowMs: voice.ReconnectWindow,
      initialDelayMs: voice.ReconnectDelay,
      maxDelayMs: voice.ReconnectMaxDelay,
      stableAfterMs: voice.ReconnectStableAfter,
    },
  };
}
