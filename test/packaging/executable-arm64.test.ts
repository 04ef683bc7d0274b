// dist/voice-hub-linux-arm64 as built by `make binaries`, run alone under qemu-user (see executables.ts).
import { aloneTest } from './executables.js';

aloneTest('arm64');
