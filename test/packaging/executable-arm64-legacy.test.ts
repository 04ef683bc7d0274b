// dist/voice-hub-linux-arm64-legacy (Node 20) as built by `make binaries`, run alone under qemu-user on
// Debian 12's libraries (see executables.ts).
import { aloneTest } from './executables.js';

aloneTest('arm64-legacy');
