// Which certificates of a served chain TLS clients refuse for the digest they were signed with. BoringSSL
// (uWS) serves a leaf signed with SHA-1 without a word, while OpenSSL 3's clients (curl, Python and Node on
// Debian and Raspberry Pi OS) refuse it at any security level above 0: "CA signature digest algorithm too
// weak". A self-signed certificate is not refused for it: a client trusts it as given, without checking the
// signature, so only certificates a CA signed count.
import { X509Certificate } from 'node:crypto';

/** Signature algorithm OIDs (the DER bytes of their value, hex) with a digest of under 80 bits of security. */
const WEAK_SIGNATURES: Record<string, string> = {
  '2a864886f70d010102': 'MD2 with RSA', // 1.2.840.113549.1.1.2
  '2a864886f70d010103': 'MD4 with RSA', // 1.2.840.113549.1.1.3
  '2a864886f70d010104': 'MD5 with RSA', // 1.2.840.113549.1.1.4
  '2a864886f70d010105': 'SHA-1 with RSA', // 1.2.840.113549.1.1.5
  '2b0e03021d': 'SHA-1 with RSA', // 1.3.14.3.2.29 (OIW)
  '2a8648ce3d0401': 'ECDSA with SHA-1', // 1.2.840.10045.4.1
  '2a8648ce380403': 'DSA with SHA-1', // 1.2.840.10040.4.3
};

interface Element {
  tag: number;
  /** Where the element's content starts and ends. */
  start: number;
  end: number;
}

/** The DER element at `at` (definite lengths only, as DER has); undefined when it does not fit in `der`. */
function elementAt(der: Uint8Array, at: number): Element | undefined {
  const tag = der[at];
  const first = der[at + 1];
  if (tag === undefined || first === undefined) return undefined;
  let length = first;
  let start = at + 2;
  if (first & 0x80) {
    const bytes = first & 0x7f;
    if (bytes === 0 || bytes > 4) return undefined;
    length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + (der[start + i] ?? NaN);
    start += bytes;
  }
  const end = start + length;
  return Number.isFinite(end) && end <= der.length ? { tag, start, end } : undefined;
}

const SEQUENCE = 0x30;
const OBJECT_IDENTIFIER = 0x06;

/**
 * The certificate's signature algorithm OID as hex: `Certificate ::= SEQUENCE { tbsCertificate,
 * signatureAlgorithm SEQUENCE { algorithm OBJECT IDENTIFIER, ... }, signatureValue }` (RFC 5280 4.1).
 */
export function signatureAlgorithmOid(der: Uint8Array): string | undefined {
  const certificate = elementAt(der, 0);
  if (certificate?.tag !== SEQUENCE) return undefined;
  const tbs = elementAt(der, certificate.start);
  if (tbs?.tag !== SEQUENCE) return undefined;
  const algorithm = elementAt(der, tbs.end);
  if (algorithm?.tag !== SEQUENCE) return undefined;
  const oid = elementAt(der, algorithm.start);
  if (oid?.tag !== OBJECT_IDENTIFIER || oid.end > algorithm.end) return undefined;
  return Buffer.from(der.subarray(oid.start, oid.end)).toString('hex');
}

const selfSigned = (cert: X509Certificate): boolean => cert.checkIssued(cert) && cert.verify(cert.publicKey);

/** The weak algorithm `cert` was signed with by a CA, or undefined. */
export function weakSignatureOf(cert: X509Certificate): string | undefined {
  const weak = WEAK_SIGNATURES[signatureAlgorithmOid(cert.raw) ?? ''];
  return weak !== undefined && !selfSigned(cert) ? weak : undefined;
}
