// The Node 24 amd64 package in a booted Debian 13 root, the release it is for (see booted-root-suite.ts).
import { bootedRootSuite } from './booted-root-suite.js';

bootedRootSuite('trixie', 'x64', 'x64-legacy');
