// The amd64 packages in booted roots of the Debian releases they are for (see booted-root-suite.ts): the
// legacy (Node 20) one in Debian 12, the Node 24 one in Debian 13, last installed over the legacy one.
// One file, so that the two roots (about 800 MB each with their packages) are never on disk at once.
import { bootedRootSuite } from './booted-root-suite.js';

bootedRootSuite('bookworm', 'x64-legacy');
bootedRootSuite('trixie', 'x64', 'x64-legacy');
