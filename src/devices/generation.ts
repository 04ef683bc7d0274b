// A device's token generation: tokens name the generation their device was registered with, and only
// the device's current one is accepted. Random, not counted: a counter kept in the database went back
// with a restored backup and handed out again the generations of the registrations since, whose
// tokens then matched; 53 random bits make two registrations sharing one a 1-in-2^53 event.
import { randomBytes } from 'node:crypto';

/** A random generation in [1, 2^53): a JSON number without loss, and never 0 (what a token without one reads as). */
export function randomGeneration(): number {
  const bytes = randomBytes(8);
  const high = bytes.readUInt32BE(0) >>> 11; // 21 bits
  return high * 2 ** 32 + bytes.readUInt32BE(4) || 1;
}
