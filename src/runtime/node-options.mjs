// Node's own options for the service, wherever it is started for users: `make run` passes them to node,
// the systemd unit sets them as NODE_OPTIONS (for the Node 20 executables), and the Node 24 executables
// carry them inside (their sea-config's execArgv). Plain JavaScript, so that the build scripts, which run
// on plain node, share it with the bench and the tests.

/**
 * V8's helper threads (background compilation, the collector's parallel work) sized by Node from the
 * available cores: one fewer than there are, at least one, instead of Node's fixed four. On a 2-core
 * board, four helpers recompiling SQLite's hottest WebAssembly functions with TurboFan while the service
 * starts took the second core and part of the first: the main thread waited 60-90 ms for a core, and the
 * first 200 from /health came ~50 ms later (bench/RESULTS.md). One helper defers the recompilation by a
 * few hundred ms and leaves the main thread a core; steady-state round trips per CPU-second were the
 * same or better, and each idle helper's stack is gone (0.5 MiB of idle RSS).
 */
export const NODE_FLAGS = Object.freeze(['--v8-pool-size=0']);

/** NODE_FLAGS as NODE_OPTIONS holds them (the unit's `Environment=NODE_OPTIONS=...`). */
export const NODE_OPTIONS_TEXT = NODE_FLAGS.join(' ');
