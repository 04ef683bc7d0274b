// What the voice server must not quote back to devices or the log: the API key the link sends and the
// secret parts of its URL. A server that echoes the request ("invalid credentials: Bearer ...", "no such
// path /voice?token=...") in a frame, an error or a close reason has those parts masked first.
import { MASK } from '../config/shown.js';
import { MIN_SECRET_CHARS, serverUrlSecrets } from './public-url.js';
import type { UpstreamMessage } from './protocol.js';

export class SecretScrubber {
  /** Longest first: a secret that contains another is masked whole. */
  private readonly secrets: readonly string[];

  constructor(apiKey: string, serverUrl: string) {
    this.secrets = [...new Set([apiKey, ...serverUrlSecrets(serverUrl)])].filter((s) => s !== '').sort((a, b) => b.length - a.length);
  }

  /** Text and errors go on to every device of the session and into the log; audio carries no words. */
  message(message: UpstreamMessage): UpstreamMessage {
    if (this.secrets.length === 0 || message.kind === 'audio') return message;
    if (message.kind === 'text') return { ...message, text: this.text(message.text) };
    const scrubbed = { ...message, message: this.text(message.message) };
    return typeof message.code === 'string' ? { ...scrubbed, code: this.text(message.code) } : scrubbed;
  }

  /** Upstream's own words (a frame's unknown type, an error's text) on their way to the log or a device. */
  text(text: string): string {
    for (const secret of this.secrets) if (text.includes(secret)) text = text.replaceAll(secret, MASK);
    return text;
  }

  /**
   * A close reason holds at most 123 bytes (RFC 6455 5.5), so a server that quotes a long key in it has
   * the key cut off: the start of a secret that ends the reason goes as well as a whole one.
   */
  closeReason(reason: string): string {
    const text = this.text(reason);
    for (const secret of this.secrets) {
      for (let chars = Math.min(secret.length - 1, text.length); chars >= MIN_SECRET_CHARS; chars--) {
        if (text.endsWith(secret.slice(0, chars))) return `${text.slice(0, text.length - chars)}${MASK}`;
      }
    }
    return text;
  }
}
