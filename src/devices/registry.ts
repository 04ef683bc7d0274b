// Devices: registration, status updates, listing, deletion and token refresh (docs/protocol.md,
// "HTTP API"). No HTTP and no SQL here: storage is a repository, tokens a service.
import type { TokenService, Principal } from '../auth/tokens.js';
import { DomainError } from '../errors.js';
import type { DeviceSettings } from '../settings/categories.js';
import type { DeviceRecord, DeviceRepository } from '../store/types.js';
import { randomGeneration } from './generation.js';

export interface RegisterRequest {
  deviceId: string;
  deviceName: string;
  deviceType: string;
  capabilities?: string[];
  location?: string;
}

export interface StatusRequest {
  status: string;
  batteryLevel?: number | null;
  temperature?: number | null;
  memoryUsage?: number | null;
  cpuUsage?: number | null;
}

/** A device as the list endpoint shows it (`GET /api/device/list`: four metrics nested under `metrics`). */
export interface DeviceView {
  id: string;
  name: string;
  type: string;
  status: string;
  location: string;
  lastSeen: string;
  metrics: { batteryLevel: number | null; temperature: number | null; memoryUsage: number | null; cpuUsage: number | null };
}

export interface TokenGrant {
  deviceToken: string;
  expiresAt: string;
  deviceInfo: { id: string; name: string; status: string; lastSeen: string };
}

/** Told about changes after they are stored (MQTT, voice sessions). Must not throw or block. */
export interface DeviceListener {
  deviceChanged?(device: DeviceRecord): void;
  deviceDeleted?(deviceId: string): void | Promise<void>;
}

export interface DeviceRegistryDeps {
  repo: DeviceRepository;
  tokens: TokenService;
  settings: () => DeviceSettings;
  listeners?: DeviceListener[];
  now?: () => Date;
}

export class DeviceRegistry {
  /** Registrations between their checks and their durable insert, so concurrent ones cannot exceed MaxDevices. */
  private readonly pending = new Set<string>();
  /**
   * Deletions not yet answered: their devices' sessions are still ending. Registering the id again
   * meanwhile made a device whose sessions the deletion ended, and whose id its listeners cleared.
   * Each with its write, settled (never rejected) once the disk has taken or refused it: see deletionWritten.
   */
  private readonly deleting = new Map<string, Promise<void>>();
  private readonly listeners: DeviceListener[];
  private readonly now: () => Date;
  /** The last time written, and its text: status updates come many to a millisecond under load. */
  private lastTime = NaN;
  private lastTimeText = '';

  constructor(private readonly deps: DeviceRegistryDeps) {
    this.listeners = deps.listeners ?? [];
    this.now = deps.now ?? (() => new Date());
  }

  addListener(listener: DeviceListener): void {
    this.listeners.push(listener);
  }

  exists(id: string): boolean {
    return this.deps.repo.get(id) !== undefined;
  }

  get(id: string): DeviceRecord | undefined {
    return this.deps.repo.get(id);
  }

  /** The registered device's token generation (a device registered again under its id has another). */
  generation(id: string): number | undefined {
    return this.deps.repo.generation(id);
  }

  async register(req: RegisterRequest): Promise<TokenGrant> {
    const settings = this.deps.settings();
    if (!settings.allowDeviceRegistration) throw new DomainError('forbidden', 'Device registration is disabled.');
    const id = req.deviceId;
    if (this.pending.has(id) || this.deps.repo.get(id)) throw new DomainError('conflict', `device '${id}' already exists`);
    if (this.deleting.has(id)) throw new DomainError('conflict', `device '${id}' is being deleted; register it again once the deletion is answered`);
    // A deletion frees its slot when it is answered: one that cannot be written gives the device back.
    if (this.deps.repo.count() + this.pending.size + this.deleting.size >= settings.maxDevices) {
      throw new DomainError('conflict', `The maximum number of devices (${settings.maxDevices}) is registered.`);
    }
    this.pending.add(id);
    try {
      const at = this.now().toISOString();
      const device: DeviceRecord = {
        id,
        name: req.deviceName,
        type: req.deviceType,
        capabilities: req.capabilities ?? [],
        location: req.location ?? '',
        status: 'online',
        registeredAt: at,
        lastSeen: at,
        batteryLevel: null,
        temperature: null,
        memoryUsage: null,
        cpuUsage: null,
        // A generation of its own, so tokens of an earlier device with this id stay dead.
        tokenGeneration: randomGeneration(),
      };
      const grant = await this.grant(device, settings.tokenExpiration);
      // The repository counts the device from the moment insert() starts; leaving it in `pending`
      // until the write is on disk would count it twice and refuse a registration that fits.
      const inserted = this.deps.repo.insert(device);
      this.pending.delete(id);
      const applied = this.isCurrent(device);
      try {
        await inserted;
      } catch (e) {
        if (applied && !this.isCurrent(device)) this.undone(id);
        throw e;
      }
      this.notify((l) => l.deviceChanged?.(device));
      return grant;
    } finally {
      this.pending.delete(id);
    }
  }

  updateStatus(id: string, req: StatusRequest): DeviceView {
    const current = this.require(id);
    const telemetry = {
      status: req.status,
      lastSeen: this.timeText(),
      batteryLevel: req.batteryLevel ?? null,
      temperature: req.temperature ?? null,
      memoryUsage: req.memoryUsage ?? null,
      cpuUsage: req.cpuUsage ?? null,
    };
    this.deps.repo.updateTelemetry(id, telemetry);
    const updated = { ...current, ...telemetry };
    this.notify((l) => l.deviceChanged?.(updated));
    return toView(updated);
  }

  list(): { devices: DeviceView[]; totalCount: number } {
    const devices = this.deps.repo.list().map(toView);
    return { devices, totalCount: devices.length };
  }

  async delete(id: string): Promise<DeviceView> {
    const current = this.require(id);
    try {
      // The store drops the device (and its sessions) from memory at once, before the write.
      const written = this.deps.repo.delete(id);
      this.deleting.set(id, written.then(() => undefined, () => undefined));
      try {
        await written;
      } catch (e) {
        this.back(id);
        throw e;
      }
      for (const l of this.listeners) {
        try {
          await l.deviceDeleted?.(id);
        } catch {
          // a listener's failure must not undo an acknowledged deletion
        }
      }
    } finally {
      this.deleting.delete(id);
    }
    return toView(current);
  }

  /**
   * Settles once the deletion of `id` being written is on disk or refused by it; undefined when none is.
   * Meanwhile the device is gone from the store but not for good: a deletion the disk refuses (503) is
   * undone, and gives the device back with its session records as they were before it. What belongs to
   * the device (a session's final record) is decided once this has settled, not from the device's absence.
   */
  deletionWritten(id: string): Promise<void> | undefined {
    return this.deleting.get(id);
  }

  /** A fresh token for a device whose current token is still valid (or at an admin's request). */
  async refreshToken(id: string): Promise<TokenGrant> {
    const device = this.require(id);
    const grant = await this.grant(device, this.deps.settings().tokenExpiration);
    // Signing let a DELETE run (and perhaps a registration of the id): a token for the device it removed
    // would be answered 200 and refused at its first use. Answered as a refresh just after the DELETE is.
    if (this.generation(id) !== device.tokenGeneration) throw deviceNotFound(id);
    return grant;
  }

  /** A device token is current while its device exists with the generation it was issued for. */
  isTokenCurrent(principal: Principal): boolean {
    if (principal.role === 'admin') return true;
    const current = this.generation(principal.sub);
    return current !== undefined && current === principal.gen;
  }

  /** Whether `device` is in the store (in memory: its write may still be under way). */
  private isCurrent(device: DeviceRecord): boolean {
    try {
      return this.deps.repo.generation(device.id) === device.tokenGeneration;
    } catch {
      return false; // the store is closed
    }
  }

  /**
   * A registration the disk refused (503) is undone: the device never was. It was in the store while its
   * write was under way, and what read the devices then acted on it: an MQTT broker switched to meanwhile
   * was given its retained state and Home Assistant discovery, so Home Assistant showed a device that did
   * not exist. Told as a deletion, the listeners take back what they did for it.
   */
  private undone(id: string): void {
    for (const l of this.listeners) {
      try {
        void Promise.resolve(l.deviceDeleted?.(id)).catch(() => undefined);
      } catch {
        // best-effort, as for a deletion: the registration's own failure is the answer
      }
    }
  }

  /**
   * A deletion the disk refused is undone: the device is back as it was. It was missing from the store
   * while the deletion was written, and what read the devices then acted on its absence: an MQTT broker
   * switched to meanwhile was given every device but this one, and never its state or discovery. Told as
   * a change, the listeners publish it again (the broker it never left just gets its state once more).
   */
  private back(id: string): void {
    let device: DeviceRecord | undefined;
    try {
      device = this.deps.repo.get(id);
    } catch {
      return; // the store is closed (shutdown): nothing to publish any more
    }
    if (device) this.notify((l) => l.deviceChanged?.(device));
  }

  /** Now as toISOString writes it (an invalid date throws as that does: NaN never equals the last). */
  private timeText(): string {
    const now = this.now();
    const time = now.getTime();
    if (time !== this.lastTime) {
      this.lastTimeText = now.toISOString();
      this.lastTime = time;
    }
    return this.lastTimeText;
  }

  private require(id: string): DeviceRecord {
    const device = this.deps.repo.get(id);
    if (!device) throw deviceNotFound(id);
    return device;
  }

  private async grant(device: DeviceRecord, ttlMs: number): Promise<TokenGrant> {
    const { token, expiresAt } = await this.deps.tokens.issueDevice(device.id, device.tokenGeneration, ttlMs);
    return {
      deviceToken: token,
      expiresAt: expiresAt.toISOString(),
      deviceInfo: { id: device.id, name: device.name, status: device.status, lastSeen: device.lastSeen },
    };
  }

  private notify(fn: (l: DeviceListener) => void): void {
    for (const l of this.listeners) {
      try {
        fn(l);
      } catch {
        // listeners are best-effort side channels (MQTT); the request already succeeded
      }
    }
  }
}

/** A device that is not registered (any more): the API's 404, the hub's completion error. */
export function deviceNotFound(id: string): DomainError {
  return new DomainError('not_found', `device '${id}' does not exist`);
}

export function toView(d: DeviceRecord): DeviceView {
  return {
    id: d.id,
    name: d.name,
    type: d.type,
    status: d.status,
    location: d.location,
    lastSeen: d.lastSeen,
    metrics: { batteryLevel: d.batteryLevel, temperature: d.temperature, memoryUsage: d.memoryUsage, cpuUsage: d.cpuUsage },
  };
}
