// A service on HTTPS whose certificate this machine does not trust (self-signed, or signed by a LAN CA:
// docs/https.md sets up both) fails a request with TLS's own words ("self-signed certificate"), which
// read as a broken service. The commands that ask a service (health, simulate) add how to trust it;
// verification stays on, as docs/https.md insists. A certificate outside its dates gets the reading of
// the clock that judged it (a Pi without a real-time clock is in the past until NTP sets it).

import { certificateDatesNote } from '../errors.js';

/** Node's codes for a certificate chain that verified up to no CA this machine trusts. */
const UNTRUSTED = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
]);

/** Whether `cause` (fetch's error cause) is a certificate chain this machine does not trust. */
export function isUntrustedCertificate(cause: unknown): boolean {
  const code = (cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && UNTRUSTED.has(code);
}

/**
 * What to add to a failed request's reason when `cause` (fetch's error cause) is an untrusted certificate,
 * or one outside its validity period by this machine's clock (certificateDatesNote).
 */
export function untrustedCertificateHint(cause: unknown, now?: () => Date): string {
  return isUntrustedCertificate(cause)
    ? '; the certificate is not trusted here: give the command its certificate or CA as NODE_EXTRA_CA_CERTS=/path/to/voice-hub.crt (never turn verification off)'
    : certificateDatesNote(cause, now);
}
