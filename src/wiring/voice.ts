// The voice sessions: one upstream link per session, started for known devices, with the runtime voice
// settings; sessions a crash interrupted are recorded as such before any new one starts.
import type { AppConfig } from '../config/types.js';
import type { DeviceRegistry } from '../devices/registry.js';
import type { Logger } from '../log/logger.js';
import type { ConfigCategories } from '../settings/categories.js';
import type { Store } from '../store/types.js';
import { decoderThreads, sessionBudgets } from '../voice/budgets.js';
import { DecoderPool } from '../voice/opus/decoder-pool.js';
import { loadNativeOpus, type NativeOpus } from '../voice/opus/native-opus.js';
import type { SessionListener } from '../voice/session-events.js';
import { VoiceSessionService } from '../voice/sessions.js';

export interface VoiceDeps {
  store: Store;
  categories: ConfigCategories;
  registry: DeviceRegistry;
  listeners: SessionListener[];
  /** Extra CA certificates for a wss:// upstream (VoiceService.CaFile). */
  voiceCa: Buffer | undefined;
  logger: Logger;
}

export async function createVoice(config: AppConfig, deps: VoiceDeps): Promise<VoiceSessionService> {
  const { categories, registry } = deps;
  const logger = deps.logger.child('Upstream');
  const decoders = new DecoderPool({
    threads: decoderThreads(config.VoiceService.DecoderThreads),
    queuePerThread: config.VoiceService.DecoderQueuePerThread,
    logger,
    ...nativeOpus(config.VoiceService.OpusLibrary, logger),
  });
  logger.info(`Opus decoding: ${decoders.engine}`);
  const sessions = new VoiceSessionService({
    config: {
      serverUrl: config.VoiceService.ServerUrl,
      apiKey: config.VoiceService.ApiKey,
      connectTimeoutMs: config.VoiceService.ConnectTimeout,
      sessionIdleTimeoutMs: config.VoiceService.SessionIdleTimeout,
      deviceReconnectGraceMs: config.VoiceService.DeviceReconnectGracePeriod,
      enableVoice: () => categories.voice().enableVoice,
      budgets: sessionBudgets(config.VoiceService),
    },
    sessions: deps.store.sessions,
    deviceGeneration: (id) => registry.generation(id),
    deletionWritten: (id) => registry.deletionWritten(id),
    voiceDefaults: () => {
      const v = categories.voice();
      return { sampleRate: v.audioSampleRate, channels: v.audioChannels };
    },
    listeners: deps.listeners,
    logger,
    decoders,
    ...(deps.voiceCa ? { link: { ca: deps.voiceCa } } : {}),
  });
  await sessions.recordInterrupted();
  return sessions;
}

/** The system libopus of VoiceService.OpusLibrary, or nothing (said in the log) when it is off or will not load. */
function nativeOpus(library: string, logger: Logger): { native?: NativeOpus } {
  if (library === '') return {};
  const native = loadNativeOpus(library);
  if (native instanceof Error) {
    logger.warn(`Opus: ${library} cannot be used (${native.message}); the bundled wasm libopus decodes instead (install libopus0, or set VoiceService.OpusLibrary to "" to say so)`);
    return {};
  }
  return { native };
}
