// The text of a configuration file as .NET's JSON configuration provider reads it: through a StreamReader
// that tells the encoding by its byte order mark (UTF-8, UTF-16 either way round, UTF-32 either way
// round) and takes UTF-8 when there is none. Windows editors and PowerShell 5's `Out-File` save UTF-16
// with a mark; such a file works under ASP.NET Core, so it works here. Bytes that do not decode become
// U+FFFD, as there.

const REPLACEMENT = 0xfffd;

export function decodeConfigBytes(bytes: Buffer): string {
  const [b0, b1, b2, b3] = bytes;
  if (b0 === 0xff && b1 === 0xfe && b2 === 0 && b3 === 0) return utf32(bytes.subarray(4), true);
  if (b0 === 0 && b1 === 0 && b2 === 0xfe && b3 === 0xff) return utf32(bytes.subarray(4), false);
  if (b0 === 0xff && b1 === 0xfe) return new TextDecoder('utf-16le').decode(bytes.subarray(2));
  if (b0 === 0xfe && b1 === 0xff) return new TextDecoder('utf-16be').decode(bytes.subarray(2));
  return bytes.toString('utf8');
}

function utf32(bytes: Buffer, littleEndian: boolean): string {
  const parts: string[] = [];
  const whole = bytes.length - (bytes.length % 4);
  for (let i = 0; i < whole; i += 4) {
    const cp = littleEndian ? bytes.readUInt32LE(i) : bytes.readUInt32BE(i);
    const valid = cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff);
    parts.push(String.fromCodePoint(valid ? cp : REPLACEMENT));
  }
  if (whole < bytes.length) parts.push(String.fromCodePoint(REPLACEMENT));
  return parts.join('');
}
