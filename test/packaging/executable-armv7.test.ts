// Smoke test of dist/voice-hub-linux-armv7 as built by `make binaries` (see executables.ts), under qemu-user.
import { smokeTest } from './executables.js';

smokeTest('armv7');
