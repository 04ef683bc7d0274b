// Devices. Registration and deletion are durable; telemetry is
// kept as the latest value per device and written at the next flush (docs/operations.md, "Storage").
import { DomainError } from '../errors.js';
import type { StoreContext } from './context.js';
import type { Param, Row } from './database.js';
import type { DeviceRecord, DeviceRepository, DeviceTelemetry } from './types.js';

const COLUMNS = `id, name, type, capabilities, location, status, registered_at, last_seen,
  battery_level, temperature, memory_usage, cpu_usage, token_generation`;

export class SqlDeviceRepository implements DeviceRepository {
  /** Latest telemetry per device not yet written to SQL. */
  private readonly telemetry = new Map<string, DeviceTelemetry>();
  /**
   * Rows as last read from SQL, by id: every authenticated request and status update looks its device
   * up (token revocation, ownership), and a sql.js query costs far more than the rest of the request.
   * An entry is dropped whenever its row changes (and when such a change is undone).
   */
  private readonly rows = new Map<string, DeviceRecord>();

  constructor(
    private readonly ctx: StoreContext,
    /** Removes the records the device's deletion takes with it (its sessions); returns their undo. */
    private readonly removeOwned: (deviceId: string) => () => void = () => () => {},
  ) {}

  get pendingCount(): number {
    return this.telemetry.size;
  }

  get(id: string): DeviceRecord | undefined {
    this.ctx.assertOpen();
    const device = this.row(id);
    return device ? this.withTelemetry(device) : undefined;
  }

  generation(id: string): number | undefined {
    this.ctx.assertOpen();
    return this.row(id)?.tokenGeneration;
  }

  /**
   * In the order the devices were registered: by rowid, which each insert takes next and VACUUM keeps in
   * order, not by registered_at. That is the wall clock's, which a Pi without a real-time clock has wrong
   * until NTP steps it, back as well as forward: ordered by it, a device registered after a step back was
   * listed before those registered earlier.
   */
  list(): DeviceRecord[] {
    this.ctx.assertOpen();
    return this.ctx.db
      .all(`SELECT ${COLUMNS} FROM devices ORDER BY rowid`)
      .map((row) => this.withTelemetry(toDevice(row)));
  }

  count(): number {
    this.ctx.assertOpen();
    return Number(this.ctx.db.one('SELECT count(*) AS n FROM devices')?.n ?? 0);
  }

  async insert(device: DeviceRecord): Promise<void> {
    this.ctx.assertWritable();
    const { db } = this.ctx;
    // Checked here, synchronously, so two concurrent registrations of one id cannot both pass.
    if (db.one('SELECT 1 AS x FROM devices WHERE id = ?', [device.id])) {
      throw new DomainError('conflict', `device '${device.id}' already exists`);
    }
    db.run(`INSERT INTO devices (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, deviceParams(device));
    this.rows.delete(device.id);
    await this.ctx.commit(() => {
      db.run('DELETE FROM devices WHERE id = ?', [device.id]);
      this.rows.delete(device.id);
    });
  }

  async delete(id: string): Promise<boolean> {
    this.ctx.assertWritable();
    const { db } = this.ctx;
    if (!db.one('SELECT 1 AS x FROM devices WHERE id = ?', [id])) return false;
    const undoDevice = db.captureRow('devices', 'id', id);
    // Telemetry queued for the deleted device must not land on a device later registered under its id.
    // It was answered 200, so a deletion that cannot be written gives it back with the row.
    const queued = this.telemetry.get(id);
    this.telemetry.delete(id);
    db.run('DELETE FROM devices WHERE id = ?', [id]);
    const undoOwned = this.removeOwned(id);
    this.rows.delete(id);
    await this.ctx.commit(() => {
      undoDevice();
      undoOwned();
      this.rows.delete(id);
      if (queued && !this.telemetry.has(id)) {
        this.telemetry.set(id, queued);
        this.ctx.queued();
      }
    });
    return true;
  }

  updateTelemetry(id: string, telemetry: DeviceTelemetry): void {
    this.ctx.assertWritable();
    // Unknown devices are ignored: the caller answers 404 before getting here, and a device deleted
    // meanwhile must not be revived.
    if (!this.row(id)) return;
    this.telemetry.set(id, { ...telemetry });
    this.ctx.queued();
  }

  /** Moves queued telemetry into SQL (inside the caller's transaction). */
  writePending(): void {
    for (const [id, t] of this.telemetry) {
      this.ctx.db.run(
        `UPDATE devices SET status = ?, last_seen = ?, battery_level = ?, temperature = ?,
           memory_usage = ?, cpu_usage = ? WHERE id = ?`,
        [t.status, t.lastSeen, t.batteryLevel, t.temperature, t.memoryUsage, t.cpuUsage, id],
      );
      const cached = this.rows.get(id);
      if (cached) this.rows.set(id, { ...cached, ...t });
    }
    this.telemetry.clear();
  }

  /** The row as stored (without queued telemetry), from the cache or SQL. Callers must not modify it. */
  private row(id: string): DeviceRecord | undefined {
    let device = this.rows.get(id);
    if (!device) {
      const row = this.ctx.db.one(`SELECT ${COLUMNS} FROM devices WHERE id = ?`, [id]);
      if (!row) return undefined;
      device = toDevice(row);
      this.rows.set(id, device);
    }
    return device;
  }

  /** A copy for the caller, with queued telemetry applied. */
  private withTelemetry(device: DeviceRecord): DeviceRecord {
    const t = this.telemetry.get(device.id);
    return t ? { ...device, ...t } : { ...device };
  }
}

function deviceParams(d: DeviceRecord): Param[] {
  return [
    d.id, d.name, d.type, JSON.stringify(d.capabilities), d.location, d.status, d.registeredAt, d.lastSeen,
    d.batteryLevel, d.temperature, d.memoryUsage, d.cpuUsage, d.tokenGeneration,
  ];
}

const numberOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

function toDevice(row: Row): DeviceRecord {
  return {
    id: String(row.id),
    name: String(row.name),
    type: String(row.type),
    capabilities: JSON.parse(String(row.capabilities)) as string[],
    location: String(row.location),
    status: String(row.status),
    registeredAt: String(row.registered_at),
    lastSeen: String(row.last_seen),
    batteryLevel: numberOrNull(row.battery_level),
    temperature: numberOrNull(row.temperature),
    memoryUsage: numberOrNull(row.memory_usage),
    cpuUsage: numberOrNull(row.cpu_usage),
    tokenGeneration: Number(row.token_generation),
  };
}
