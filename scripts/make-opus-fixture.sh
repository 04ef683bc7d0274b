#!/bin/sh
# Regenerates test/fixtures/speech-16k-mono.packets.json: real speech (espeak-ng) encoded by opusenc
# (opus-tools) as 20 ms mono packets, pulled out of the Ogg container into a JSON array of Base64 packets.
# Needs: espeak-ng, opus-tools, node. The packets are decoded at 16 kHz mono by the tests.
set -eu
cd "$(dirname "$0")/.."
out=test/fixtures/speech-16k-mono.packets.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

espeak-ng -v en-us -s 160 -w "$tmp/speech.wav" "Hello. Please turn on the kitchen lights."
# Wideband is all a 16 kHz decode can carry; 24 kbit/s keeps the fixture small.
opusenc --quiet --bitrate 24 --framesize 20 --downmix-mono --max-delay 0 \
  --comment "title=voice-hub test fixture" "$tmp/speech.wav" "$tmp/speech.opus"

# Ogg pages (RFC 3533): "OggS", header type, granule, serial, sequence, CRC, segment table; packets are
# runs of lacing values ending in one below 255. The first two packets are OpusHead and OpusTags (RFC 7845).
node --input-type=module - "$tmp/speech.opus" "$out" <<'JS'
import { readFileSync, writeFileSync } from 'node:fs';
const [src, dst] = process.argv.slice(2);
const ogg = readFileSync(src);
const packets = [];
let partial = [];
for (let at = 0; at < ogg.length;) {
  if (ogg.toString('latin1', at, at + 4) !== 'OggS') throw new Error(`no Ogg page at byte ${at}`);
  const segments = ogg[at + 26];
  const lacing = ogg.subarray(at + 27, at + 27 + segments);
  let body = at + 27 + segments;
  for (const len of lacing) {
    partial.push(ogg.subarray(body, body + len));
    body += len;
    if (len < 255) { packets.push(Buffer.concat(partial)); partial = []; }
  }
  at = body;
}
if (packets[0]?.toString('latin1', 0, 8) !== 'OpusHead') throw new Error('not an Ogg Opus stream');
const audio = packets.slice(2, 2 + 100); // at most 2 s of 20 ms packets
writeFileSync(dst, JSON.stringify(audio.map((p) => p.toString('base64')), null, 0) + '\n');
console.log(`${dst}: ${audio.length} packets, ${audio.reduce((n, p) => n + p.length, 0)} bytes of Opus`);
JS
