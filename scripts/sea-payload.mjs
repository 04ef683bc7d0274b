// Appends assets after the end of an executable (every target: scripts/build-binaries.mjs says why they
// are not SEA assets). The ELF loader ignores bytes past the last segment, so the executable still runs;
// src/runtime/assets.ts reads them back from process.execPath. Never strip a file after this: strip
// rewrites the ELF and drops the payload.
//
// Layout: entry bytes, one after another | index: UTF-8 JSON {name: [offset, length, sha256 hex]},
// offsets from the first entry | trailer (24 bytes): "VHASSET1", u32 LE index length, u32 0, u64 LE
// length of entries + index. The hash names the file a native addon is unpacked to, so a start finds
// it there without reading the addon out of the executable again.
import { createHash } from 'node:crypto';
import { appendFileSync } from 'node:fs';

export const PAYLOAD_MAGIC = 'VHASSET1';
export const TRAILER_BYTES = 24;

/** The payload for `assets` (a Map or array of [name, Buffer]) as one Buffer. */
export function buildPayload(assets) {
  const parts = [];
  const index = {};
  let offset = 0;
  for (const [name, bytes] of assets) {
    index[name] = [offset, bytes.length, createHash('sha256').update(bytes).digest('hex')];
    parts.push(bytes);
    offset += bytes.length;
  }
  const indexBytes = Buffer.from(JSON.stringify(index), 'utf8');
  const trailer = Buffer.alloc(TRAILER_BYTES);
  trailer.write(PAYLOAD_MAGIC, 0, 'latin1');
  trailer.writeUInt32LE(indexBytes.length, 8);
  trailer.writeBigUInt64LE(BigInt(offset + indexBytes.length), 16);
  return Buffer.concat([...parts, indexBytes, trailer]);
}

export function appendPayload(file, assets) {
  appendFileSync(file, buildPayload(assets));
}
