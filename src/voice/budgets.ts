// The per-session budgets against a misbehaving upstream, read from the VoiceService configuration
// section (the schema holds their defaults and ranges).
import { availableParallelism } from 'node:os';
import type { AppConfig } from '../config/types.js';
import type { SessionBudgets } from './session.js';

export function sessionBudgets(voice: AppConfig['VoiceService']): SessionBudgets {
  return {
    decode: {
      queuePackets: voice.DecodeQueuePackets,
      queueBytes: voice.DecodeQueueBytes,
      rebuildsPerSecond: voice.DecoderRebuildsPerSecond,
      inFlightFrames: voice.DecoderQueuePerThread,
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

/**
 * VoiceService.DecoderThreads as a thread count: -1 is one per core beyond the first, which the event
 * loop keeps for I/O (0 on a single core: there a thread would only add hand-over costs).
 */
export function decoderThreads(setting: number, cores: number = availableParallelism()): number {
  return setting >= 0 ? setting : Math.max(0, cores - 1);
}
