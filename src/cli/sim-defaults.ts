// The simulator's defaults that its --help states: here, apart from src/cli/simulate.ts, so that the
// command list (read by every start, `serve` included) does not pull in the simulator and its SignalR client.
import { CONFIG_SCHEMA } from '../config/schema.js';
export const DEFAULT_DROP_FOR_MS = 1000;
export const DEFAULT_LATE_MS = 1000;
/**
 * Most simulated devices one run takes: each holds a hub connection and, while it registers and starts,
 * HTTP connections; a process's default limit of 1,024 open files ran out at a few hundred more, and
 * 100,000 set up for minutes before the first packet.
 */
export const MAX_SIMULATED_DEVICES = 500;
/**
 * Longest run: a day. Each device keeps a record of every packet it sent (4.3 million a day), and
 * longer timer delays than about 24.8 days fire at once in Node.
 */
export const MAX_SIMULATED_SECONDS = 86_400;

/** The device limit each simulated device counts against, as shipped (its words quote it). */
export const SHIPPED_MAX_DEVICES = CONFIG_SCHEMA.properties.DeviceManagement.properties.MaxDevices.default;
