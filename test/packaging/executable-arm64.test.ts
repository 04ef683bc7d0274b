// dist/voice-hub-linux-arm64 (Node 24) as built by `make binaries`, run alone under qemu-user on Debian
// 13's C and C++ libraries (see executables.ts).
import { aloneTest, voiceTest } from './executables.js';

aloneTest('arm64');
voiceTest('arm64');
