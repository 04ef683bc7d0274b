// The legacy (Node 20) amd64 package in a booted Debian 12 root, the release it is for (see booted-root-suite.ts).
import { bootedRootSuite } from './booted-root-suite.js';

bootedRootSuite('bookworm', 'x64-legacy');
