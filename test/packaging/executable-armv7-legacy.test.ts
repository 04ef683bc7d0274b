// dist/voice-hub-linux-armv7-legacy (Node 20) as built by `make binaries`, run alone under qemu-user (see
// executables.ts). Its runtime (Node 20.11) has no SEA assets: they are appended after the ELF.
import { aloneTest } from './executables.js';

aloneTest('armv7-legacy');
