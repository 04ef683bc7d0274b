// Smoke test of dist/voice-hub-linux-x64 as built by `make binaries` (see executables.ts).
import { smokeTest } from './executables.js';

smokeTest('x64');
