// dist/voice-hub-linux-x64 as built by `make binaries`, run alone as users run it (see executables.ts).
import { aloneTest, nativeTest } from './executables.js';

aloneTest('x64');
nativeTest('x64');
