// Bytes the hub sends as Base64 text (decoded audio, with both protocols). Made only from bytes, so its
// text is always Base64, which JSON needs no escaping for: the JSON protocol writes it between quotes
// as it is instead of letting JSON.stringify scan it (about 860 characters per 20 ms of 16 kHz audio,
// 2-4 % of the service's CPU), and MessagePack writes it as the string it is. Only as a top-level
// argument of an invocation the hub sends: nested in another value, JSON still writes it right (toJSON)
// and MessagePack refuses it (msgpack-encoder.ts) rather than writing an object.

export class Base64Text {
  private constructor(readonly text: string) {}

  static of(bytes: Uint8Array): Base64Text {
    return new Base64Text(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'));
  }

  toJSON(): string {
    return this.text;
  }

  toString(): string {
    return this.text;
  }
}

/** True when some argument is Base64Text. */
export function hasBase64Text(args: readonly unknown[]): boolean {
  for (const arg of args) if (arg instanceof Base64Text) return true;
  return false;
}
