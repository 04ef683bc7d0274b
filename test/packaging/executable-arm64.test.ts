// Smoke test of dist/voice-hub-linux-arm64 as built by `make binaries` (see executables.ts), under qemu-user.
import { smokeTest } from './executables.js';

smokeTest('arm64');
