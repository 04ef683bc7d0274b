// dist/voice-hub-linux-x64-legacy (Node 20) as built by `make binaries`, run alone natively on this
// Debian 12 machine, as users of Debian 12 run it (see executables.ts).
import { aloneTest, nativeTest, voiceTest } from './executables.js';

aloneTest('x64-legacy');
nativeTest('x64-legacy');
voiceTest('x64-legacy');
