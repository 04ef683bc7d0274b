// The simulator's defaults that its --help states: here, apart from src/cli/simulate.ts, so that the
// command list (read by every start, `serve` included) does not pull in the simulator and its SignalR client.
export const DEFAULT_DROP_FOR_MS = 1000;
export const DEFAULT_LATE_MS = 1000;
