// Ctrl-C (SIGINT) or SIGTERM during `voice-hub simulate`. Node's default, dying at once, left every
// device the run had registered in place (each counts against DeviceManagement.MaxDevices, so a few
// interrupted runs made the next ones fail to register) and printed nothing of what had run. The first
// signal aborts the run instead, which then reports and deletes its devices in bounded time; a second
// one exits at once. These handlers live only while a run does: serve's signals are src/main.ts's.

/** 128 + the signal's number, as a shell reports such an end; `simulate --help` states them. */
export const EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;
type Handled = keyof typeof EXIT_CODES;

/** After an interrupt, how long the process may take to end once the run is over. */
const EXIT_GRACE_MS = 2000;

export interface Interrupt {
  /** Aborts, with the signal's name as its reason, on the first signal. */
  readonly signal: AbortSignal;
  /** 128 + the signal's number once one came (130 SIGINT, 143 SIGTERM), as a shell reports such an end. */
  exitCode(): number | undefined;
  /** Gives the signals back to their defaults; call it when the run is over. */
  dispose(): void;
}

export function interruptOnSignals(log: (line: string) => void): Interrupt {
  const controller = new AbortController();
  let received: Handled | undefined;
  const handlers = (Object.keys(EXIT_CODES) as Handled[]).map((name) => {
    const handler = (): void => {
      if (received) {
        log(`${name} again: exiting without waiting for the clean-up`);
        process.exit(EXIT_CODES[name]);
      }
      received = name;
      log(`${name}: stopping; reporting what ran and deleting the devices registered (${name === 'SIGINT' ? 'Ctrl-C' : name} again to exit at once)`);
      controller.abort(name);
    };
    process.on(name, handler);
    return { name, handler };
  });
  return {
    signal: controller.signal,
    exitCode: () => (received ? EXIT_CODES[received] : undefined),
    dispose: () => {
      for (const { name, handler } of handlers) process.off(name, handler);
      // A hub connection that did not close within the clean-up time must not keep the process up.
      if (received) {
        const code = EXIT_CODES[received];
        setTimeout(() => process.exit(code), EXIT_GRACE_MS).unref();
      }
    },
  };
}
