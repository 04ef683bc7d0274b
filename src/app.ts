// createApp(config) -> {start, stop}: explicit wiring of the daemon's parts. Nothing here touches
// process, argv or signals (that is src/main.ts), so tests run the whole service in-process.
import { hubReceiversUnsent, hubSessionBridge } from './api/hub-session-bridge.js';
import { configFileLine } from './config/report.js';
import type { LoadedConfig } from './config/types.js';
import type { VoiceHubServer } from './hub/index.js';
import type { Inject } from './http/inject.js';
import type { Router } from './http/router.js';
import type { Listening } from './http/server.js';
import { loadCaFile, loadTlsFiles } from './http/tls.js';
import { loadNativeUws } from './http/uws-native.js';
import { createLogger, type Logger } from './log/logger.js';
import type { ConfiguredMqttPublisher } from './mqtt/configured.js';
import { mqttSessionEvents } from './mqtt/session-events.js';
import type { DataDirLock } from './process/data-dir-lock.js';
import { DescriptorGuard, descriptorLimit, openDescriptors } from './process/descriptor-guard.js';
import { loadInstanceId } from './process/instance-id.js';
import { leftoverRemovedText } from './store/durable-file.js';
import { assertBuildComplete } from './runtime/assets.js';
import type { Store } from './store/types.js';
import type { VoiceSessionService } from './voice/sessions.js';
import { createDevices } from './wiring/devices.js';
import { createEndpoints, listenAll } from './wiring/endpoints.js';
import { createHealthChecks } from './wiring/health.js';
import { createHttp } from './wiring/http.js';
import type { InFlightRequests } from './http/in-flight.js';
import { createHub } from './wiring/hub.js';
import { createMqtt } from './wiring/mqtt.js';
import { createStore } from './wiring/store.js';
import { assertDataFilesUsable } from './wiring/data-files.js';
import { createVoice } from './wiring/voice.js';

export interface AppDeps {
  logger?: Logger;
  /** Folder of the bundle, where build.mjs puts the run-time assets (src/runtime/asset-manifest.mjs). */
  bundleDir?: string;
  /** The data directory's lock, taken by the process (src/main.ts): the database is written only while it holds. */
  lock?: DataDirLock;
}

export interface RunningApp {
  readonly port: number;
  /** The HTTPS port, when a certificate is configured. */
  readonly httpsPort: number | undefined;
  readonly store: Store;
  readonly router: Router;
  readonly hub: VoiceHubServer;
  readonly sessions: VoiceSessionService;
  readonly mqtt: ConfiguredMqttPublisher;
  /** Runs a request through the HTTP API in this process, as the listeners do, without a socket. */
  readonly inject: Inject;
}

export interface App {
  start(): Promise<RunningApp>;
  /** Stops accepting, ends sessions, flushes storage. Idempotent. */
  stop(): Promise<void>;
  /**
   * Closes the store now, waiting for nothing else: writes from here on are refused (503), and what was
   * acknowledged (telemetry answered 200 and not yet written) is written. Only writing, without refusing,
   * would answer 200 to updates that arrive while it writes, and lose them when the process exits.
   */
  closeStore(): Promise<void>;
}

interface Parts {
  listeners: Listening[];
  descriptors?: DescriptorGuard;
  inFlight?: InFlightRequests;
  hub?: VoiceHubServer;
  sessions?: VoiceSessionService;
  mqtt?: ConfiguredMqttPublisher;
  store?: Store;
}

/**
 * How long a shutdown waits for HTTP requests already running. Theirs is work of milliseconds (a durable
 * write, a session's end); only a client trickling a body takes longer, and it is not waited for.
 */
const REQUEST_DRAIN_MS = 3000;

/**
 * How long a shutdown leaves hub sockets open after the Close message for their clients to close them
 * (the official client answers with its close frame within milliseconds). A socket the exiting process
 * closes while its client is still sending draws a TCP reset, and the client loses the message unread.
 */
const HUB_CLOSE_GRACE_MS = 1000;

export function createApp(loaded: LoadedConfig, deps: AppDeps = {}): App {
  const { config } = loaded;
  const logger = deps.logger ?? createLogger({ levels: config.Logging.LogLevel });
  const parts: Parts = { listeners: [] };
  let stopping: Promise<void> | undefined;
  /** Set when stop() is the cleanup of a start that failed: nothing had started that could be said to stop. */
  let failedStart = false;

  async function start(): Promise<RunningApp> {
    // Checked before anything opens: a bad certificate or CA file is a configuration problem (exit 78).
    const tls = loadTlsFiles(config.Server);
    const voiceCa = loadCaFile(config.VoiceService.CaFile);
    const native = loadNativeUws({ bundleDir: deps.bundleDir });
    logger.info(`uWebSockets.js native addon loaded from ${native.addonPath} (Node ${process.version}, module ABI ${process.versions.modules})`);
    // The journal is where a technician reads which file the settings came from (a default path is
    // looked for in two folders).
    logger.info(configFileLine(loaded));
    // Every other file of the build too: one it lacks is named now, not at the first request for it.
    assertBuildComplete(deps.bundleDir);
    // Before the store: a certificate uWS refuses stops start-up before anything is written.
    const endpoints = createEndpoints(config, native.uws, tls);

    // A data file it would refuse, before the store makes its file and the domain the key.
    assertDataFilesUsable(config);

    // Bottom up, each part from the ones below it: store, domain, the outbound adapters, the sessions,
    // then the transports with the adapters on them; listening comes last, so no request meets a half-built app.
    const store = await createStore(config, logger, deps.bundleDir, deps.lock);
    parts.store = store;
    try {
      const { categories, registry, verifyToken, newSigningKey, removedKeyLeftovers } = createDevices(loaded, store);
      for (const name of [...(deps.lock?.leftovers ?? []), ...removedKeyLeftovers]) logger.info(leftoverRemovedText(name));
      for (const unusable of categories.unusable()) {
        logger.warn(`stored setting ${unusable} is not one the API accepts: not used, the configuration's value applies (PUT /api/config with a valid value or null)`);
      }
      if (newSigningKey !== undefined) {
        const devices = registry.list().totalCount;
        // With devices already registered the key was lost (a partial restore, a copied data directory): say why their tokens fail.
        if (devices > 0) logger.warn(`generated a new signing key in ${newSigningKey}, none was there: the tokens of the ${devices} registered device(s) were signed with another key and are refused until each registers again or gets a new token`);
        else logger.info(`generated a new signing key in ${newSigningKey}`);
      }
      const instance = await loadInstanceId(config.Storage.DataDir);
      for (const name of instance.removed) logger.info(leftoverRemovedText(name));
      logger.info(`hub instance id ${instance.id}${instance.created ? ` (new, kept in ${instance.file})` : ''}`);
      const mqtt = createMqtt(config, store, categories, instance.id, logger);
      parts.mqtt = mqtt;
      const sessions = await createVoice(config, { store, categories, registry, listeners: [mqttSessionEvents(mqtt)], voiceCa, logger });
      parts.sessions = sessions;
      registry.addListener({
        deviceChanged: (d) => mqtt.publishDeviceState(d),
        deviceDeleted: async (id) => {
          mqtt.removeDevice(id);
          await sessions.stopAllForDevice(id);
        },
      });

      const hub = createHub(config, { endpoints, verifyToken, sessions, logger });
      parts.hub = hub;
      sessions.addListener(hubSessionBridge(hub));
      sessions.paceBy(hubReceiversUnsent(hub));
      const checks = createHealthChecks(config, { store, categories, mqtt, voiceCa });
      const { router, inject, inFlight } = createHttp(config, { endpoints, registry, sessions, categories, checks, verifyToken, logger, bundleDir: deps.bundleDir });
      parts.inFlight = inFlight;

      await listenAll(config, native.uws, endpoints, tls, logger, parts.listeners);
      const limit = descriptorLimit();
      if (limit !== undefined) {
        parts.descriptors = new DescriptorGuard({ limit, count: () => openDescriptors(limit), listeners: parts.listeners, logger });
        parts.descriptors.start();
      }
      mqtt.start(categories.mqtt());
      return { port: endpoints.ports.plain, httpsPort: endpoints.ports.https, store, router, hub, sessions, mqtt, inject };
    } catch (e) {
      failedStart = true;
      await stop();
      throw e;
    }
  }

  // Order matters: stop taking connections, end sessions (their members get SessionEnded on the hub
  // connections still open, and their end records are written; starts still connecting are answered),
  // answer the HTTP requests still running, close the hub (its clients given a moment to read the Close
  // message), then flush.
  function stop(): Promise<void> {
    stopping ??= (async () => {
      parts.descriptors?.stop();
      for (const listener of parts.listeners) listener.close();
      await parts.sessions?.shutdown().catch((e: unknown) => logger.warn(`ending sessions: ${String(e)}`));
      const unanswered = await parts.inFlight?.drained(REQUEST_DRAIN_MS);
      if (unanswered) logger.warn(`${unanswered} HTTP request(s) still unanswered after ${REQUEST_DRAIN_MS} ms: their connections close with the process`);
      await parts.hub?.closeAll({ allowReconnect: true }, HUB_CLOSE_GRACE_MS);
      await parts.mqtt?.close().catch((e: unknown) => logger.warn(`closing MQTT: ${String(e)}`));
      await parts.store?.close();
      if (!failedStart) logger.info('stopped');
    })();
    return stopping;
  }

  return { start, stop, closeStore: async () => parts.store?.close() };
}
