// Run as a child process by opus-decoder.test.ts: decodes a packet libopus rejects and prints the error on
// stdout, so the parent can check that nothing at all reached stderr (where journald would collect it).
import { SessionOpusDecoder } from '../../src/voice/opus/decoder.js';

const decoder = new SessionOpusDecoder();
await decoder.reconfigure(16000, 1);
for (const packet of [Uint8Array.from([0xfb, 0x02, 1, 2, 3]), Uint8Array.from([0xfb, 0x41, 0xff, 0xff, 0x00])]) {
  try {
    decoder.decode(packet);
    process.stdout.write('decoded without error\n');
  } catch (e) {
    process.stdout.write(`${(e as Error).message}\n`);
  }
}
decoder.free();
