// dist/voice-hub-linux-x64 (Node 24) as built by `make binaries`, run alone as users run it, on Debian
// 13's C and C++ libraries through their own dynamic loader (see executables.ts).
import { aloneTest, nativeTest, voiceTest } from './executables.js';

aloneTest('x64');
nativeTest('x64');
voiceTest('x64');
