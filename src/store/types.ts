// What the domain sees of storage: plain records and repositories, never sql.js types.
// Reads are synchronous (the database lives in memory); a durable write resolves only once the
// database file holding it is on disk.

export interface DeviceRecord {
  id: string;
  name: string;
  type: string;
  capabilities: string[];
  location: string;
  status: string;
  /** ISO 8601 UTC */
  registeredAt: string;
  /** ISO 8601 UTC */
  lastSeen: string;
  batteryLevel: number | null;
  temperature: number | null;
  memoryUsage: number | null;
  cpuUsage: number | null;
  /** Random per registration (src/devices/generation.ts); tokens carry the generation they were issued at. */
  tokenGeneration: number;
}

export interface DeviceTelemetry {
  status: string;
  lastSeen: string;
  batteryLevel: number | null;
  temperature: number | null;
  memoryUsage: number | null;
  cpuUsage: number | null;
}

export interface DeviceRepository {
  get(id: string): DeviceRecord | undefined;
  /** The device's token generation, or undefined when it is not registered: `get` without its copy, for per-packet checks. */
  generation(id: string): number | undefined;
  list(): DeviceRecord[];
  count(): number;
  /** Durable: on disk when the promise resolves. Rejects with a DomainError('conflict') if the id exists. */
  insert(device: DeviceRecord): Promise<void>;
  /**
   * Durable. Removes the device and its sessions' records; returns false when it did not exist. (Its
   * tokens stay dead for a device registered again under the same id: that one has a generation of its own.)
   */
  delete(id: string): Promise<boolean>;
  /** Telemetry is coalesced in memory and written at the next flush (Storage.FlushInterval) or on close. */
  updateTelemetry(id: string, telemetry: DeviceTelemetry): void;
}

export type SessionState = 'Starting' | 'Active' | 'Stopped' | 'Failed';

export interface SessionRecord {
  id: string;
  deviceId: string;
  userId: string;
  state: SessionState;
  startTime: string;
  endTime: string | null;
  endReason: string | null;
  config: { audioFormat: string; sampleRate: number; channels: number; autoMode: boolean; serverUrl: string };
  audioPacketsSent: number;
}

export interface SessionRepository {
  get(id: string): SessionRecord | undefined;
  /** Sessions still marked Starting/Active (used at start-up to record them as ended). */
  listOpen(): SessionRecord[];
  /** Insert or replace; coalesced like telemetry unless `durable` is set. */
  save(session: SessionRecord, durable?: boolean): Promise<void>;
  /**
   * The session's record changed in a way worth keeping but not worth a write of its own (its packet
   * counter): written at the next flush, as `latest` gives it then. Cheap to call for every change; never throws.
   * `latest` gives a record of its own on each call (a snapshot): the store keeps it and hands it out as it is.
   */
  saveLater(id: string, latest: () => SessionRecord): void;
}

export interface SettingsRepository {
  /** Stored values of a configuration category (only keys ever written through the API). */
  get(category: string): Record<string, unknown>;
  /** Durable: replaces the stored values of the category. */
  put(category: string, values: Record<string, unknown>): Promise<void>;
}

/** A message for the MQTT broker, as it was to be published. */
export interface BrokerMessage {
  topic: string;
  payload: string;
  retain: boolean;
}

/**
 * Broker messages a clean stop could not deliver, kept for the next start until a broker has them. The
 * store holds them as they are; what they mean is the MQTT adapter's.
 */
export interface BrokerMessageRepository {
  /**
   * Appends `messages` after those kept already, in place of those `take` gave (delivered since, or
   * among `messages` again). Durable.
   */
  keep(messages: readonly BrokerMessage[]): Promise<void>;
  /**
   * The kept messages not taken yet, oldest first. They stay kept (a crash leaves them for the next
   * start) until `delivered` or `keep`.
   */
  take(): BrokerMessage[];
  /** The broker has what `take` gave: none of it is kept any more (written at the next flush). */
  delivered(): void;
}

/** How an attempt to write the database file ended (the file is written whole, see persister.ts). */
export type WriteOutcome =
  | { readonly ok: true; /** ISO 8601 UTC */ readonly at: string }
  | { readonly ok: false; readonly at: string; /** The file system's words, e.g. `ENOSPC: no space left on device, write`. */ readonly error: string };

export interface Store {
  readonly devices: DeviceRepository;
  readonly sessions: SessionRepository;
  readonly settings: SettingsRepository;
  readonly brokerMessages: BrokerMessageRepository;
  /** Write pending (coalesced) changes now. */
  flush(): Promise<void>;
  /** A real read plus a check that the data dir is writable; throws with a clear message when not. */
  check(): Promise<void>;
  /**
   * The latest attempt to write the database file (undefined before the first). A failed one stays
   * here until a later write succeeds: a small probe file may still fit where the database does not.
   */
  readonly lastWrite: WriteOutcome | undefined;
  /** Flush and stop the flush timer. Idempotent. */
  close(): Promise<void>;
  /** Bytes written to the database file so far (for the storage benchmark). */
  readonly bytesWritten: number;
}
