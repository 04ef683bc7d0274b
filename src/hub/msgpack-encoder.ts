// The library's MessagePack encoder, for the few values the hub's own writer (msgpack-writer.ts) leaves
// to it: a Date (written as the timestamp extension), the library's ExtData, and what it must refuse.
// It used to write every message, with its long-string counting replaced for speed; since the writer
// took the common values, what comes here is rare and the stock encoder serves as it is.
import { Encoder, ExtensionCodec } from '@msgpack/msgpack';
import { Base64Text } from './base64-text.js';

/**
 * Base64Text is unwrapped where it belongs (an invocation's top-level arguments); anywhere else the
 * library would write it as a map with a `text` key, so encoding fails instead, saying why.
 */
const refuseNestedBase64Text = new ExtensionCodec();
refuseNestedBase64Text.register({
  type: 0,
  encode: (value: unknown) => {
    if (value instanceof Base64Text) throw new Error('Base64Text is only sent as a top-level invocation argument');
    return null;
  },
  decode: () => {
    throw new Error('the hub does not decode with this codec');
  },
});

export function hubMessagePackEncoder(): Encoder {
  // undefined inside results and arguments is dropped, as JSON drops it, so both protocols agree.
  return new Encoder({ ignoreUndefined: true, extensionCodec: refuseNestedBase64Text });
}
