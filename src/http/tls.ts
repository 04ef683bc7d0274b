// The HTTPS certificate and the upstream CA file, checked before anything listens. uWS takes file
// names and reports a bad certificate only as "App construction failed", so the files are read and
// checked here with node:crypto first and every problem becomes one ConfigError line (exit 78).
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { statSync } from 'node:fs';
import path from 'node:path';
import { readBoundedFile, unreadableReason } from '../bounded-file.js';
import { ConfigError } from '../config/load.js';
import { weakSignatureOf } from './signature-digest.js';
import { unicodeEscape } from '../hidden-characters.js';
import type { AppConfig } from '../config/types.js';

export interface TlsFiles {
  /** Absolute paths, as uWS `SSLApp({cert_file_name, key_file_name})` wants them. */
  readonly certFile: string;
  readonly keyFile: string;
  /** The leaf certificate, for the start-up log line. */
  readonly subject: string;
  readonly validFrom: Date;
  readonly validTo: Date;
  /** Names the certificate is valid for (subjectAltName), for the start-up log line. */
  readonly names: string;
  /** The key file's permission bits when every user of the machine may read it (a warning at start). */
  readonly keyReadableByOthers?: number;
  /** The bits of an RSA key shorter than clients at OpenSSL's default security level accept (a warning at start). */
  readonly weakRsaBits?: number;
  /** Which certificate of the chain a CA signed with SHA-1 or MD5, which TLS clients refuse (a warning at start). */
  readonly weakSignature?: string;
}

const CERT_KEY = 'Server.Certificate.Path';
const KEY_KEY = 'Server.Certificate.KeyPath';

/** A certificate chain or a key is a few KiB. */
const MAX_PEM_BYTES = 1024 * 1024;

function readPem(file: string, key: string): { text: string } | { problem: string } {
  try {
    return { text: readBoundedFile(file, MAX_PEM_BYTES).toString('utf8') };
  } catch (e) {
    return { problem: `${key}: cannot read ${file}: ${unreadableReason((e as NodeJS.ErrnoException).code, MAX_PEM_BYTES, 'a certificate or key')}` };
  }
}

const message = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/**
 * RSA keys below this are refused: TLS 1.3 cannot sign a handshake with one under 528 bits (RSA-PSS with
 * SHA-256), and Node's and OpenSSL's clients refuse a certificate's key under 1024 at any security level.
 */
const MIN_RSA_BITS = 1024;
/** What clients at OpenSSL's default security level 2 (Debian's curl, Python, Node) accept: shorter, a warning. */
export const ACCEPTED_RSA_BITS = 2048;

/** The EC curves TLS can sign a handshake with (RFC 8446 4.2.3, RFC 8422 5.1.1); P-224 is not among them. */
const TLS_CURVES: Record<string, string> = { prime256v1: 'P-256', secp384r1: 'P-384', secp521r1: 'P-521' };

/** An RSA key's modulus length; undefined for another kind of key. */
const rsaBitsOf = (key: KeyObject): number | undefined => (key.asymmetricKeyType === 'rsa' ? (key.asymmetricKeyDetails?.modulusLength ?? 0) : undefined);

/**
 * Why uWS' TLS library (BoringSSL) cannot serve HTTPS with this key, or undefined when it can. Node's
 * OpenSSL reads more kinds than BoringSSL serves: an Ed448, DSA, RSA-PSS or X25519 key failed start-up
 * with uWS' bare "App construction failed" (exit 1, retried by systemd), and an EC key on a curve TLS
 * does not sign with (P-224) started and then failed every handshake.
 */
function unservableKey(key: KeyObject): string | undefined {
  const type = key.asymmetricKeyType;
  const bits = rsaBitsOf(key);
  if (bits !== undefined) {
    if (bits >= MIN_RSA_BITS) return undefined;
    return `it is a ${bits}-bit RSA key, too short for TLS clients to accept; make one of ${ACCEPTED_RSA_BITS} bits (openssl req -newkey rsa:${ACCEPTED_RSA_BITS} ...)`;
  }
  if (type === 'ed25519') return undefined;
  const curve = key.asymmetricKeyDetails?.namedCurve;
  if (type === 'ec' && curve !== undefined && curve in TLS_CURVES) return undefined;
  const what = type === 'ec' ? `an EC key on curve ${curve ?? 'with explicit parameters'}` : `a key of type ${type ?? 'unknown'}`;
  const curves = Object.values(TLS_CURVES);
  const onCurves = `${curves.slice(0, -1).join(', ')} or ${curves.at(-1)}`;
  return `it is ${what}, which the HTTPS server cannot sign with; use an RSA key, an EC key on ${onCurves}, or an Ed25519 key`;
}

/**
 * The labels of a certificate block the HTTPS server (BoringSSL) reads: all three for the server
 * certificate, only the first two further down the chain, where it skips any other block without a word.
 */
const CERTIFICATE_BEGIN = /-----BEGIN ((?:X509 |TRUSTED )?CERTIFICATE)-----/g;
const TRUSTED = 'TRUSTED CERTIFICATE';

/**
 * `text` without what BoringSSL's PEM reader trims from the end of a line before comparing it: every
 * character up to space. A loop, not a regular expression: `/[\x00-\x20]*$/` retries from each blank of
 * a long run that something else ends (quadratic).
 */
function trimBlanksEnd(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) <= 0x20) end--;
  return text.slice(0, end);
}

/** Text beside a marker on its line, readable in one log line; a byte-order mark (some editors save one) by name. */
const shown = (extra: string): string => (extra === '\uFEFF' ? 'a UTF-8 byte-order mark' : JSON.stringify(extra).replace(/[^\x20-\x7e]/g, unicodeEscape));

/**
 * What else shares the line of the marker at `start` (`length` long), or undefined when it stands alone.
 * The HTTPS server's PEM reader (BoringSSL) takes a BEGIN or END line only when the line starts with it
 * and nothing but blanks follows; Node's reads more leniently, so a block with a byte-order mark or other
 * text before its BEGIN passed these checks and then was skipped by uWS: a chain's intermediate silently
 * left out of every handshake (clients: "unable to get local issuer certificate"), or a first
 * certificate refused with the bare "App construction failed". `byteOrderMarkRead`: the reader is
 * Node's OpenSSL, which takes a byte-order mark before the line (and only that).
 */
function besideMarker(text: string, start: number, length: number, byteOrderMarkRead = false): string | undefined {
  const lineStart = text.lastIndexOf('\n', start - 1) + 1;
  const lineEnd = text.indexOf('\n', start + length);
  const before = text.slice(lineStart, start);
  const after = trimBlanksEnd(text.slice(start + length, lineEnd < 0 ? undefined : lineEnd));
  if (before !== '' && !(byteOrderMarkRead && before === '\uFEFF')) return `${shown(before)} before it`;
  if (after !== '') return `${shown(after)} after it`;
  return undefined;
}

/**
 * Who reads a certificate file after these checks: the HTTPS server (uWS' BoringSSL) reads a chain, Node's
 * TLS (OpenSSL) the CA file of the upstream. OpenSSL takes a byte-order mark before a BEGIN line and a
 * TRUSTED CERTIFICATE anywhere, BoringSSL neither; both stop at a damaged certificate or skip a block
 * whose BEGIN or END line holds anything else.
 */
type Reader = 'https-server' | 'node-tls';
const READER_NAME: Record<Reader, string> = { 'https-server': 'the HTTPS server', 'node-tls': 'TLS' };

/**
 * Every certificate of the file, or what is wrong with one. X509Certificate reads only the first; uWS
 * reads the whole chain and refused a damaged intermediate with its bare "App construction failed",
 * which `config check` had passed, and Node's TLS stopped reading a CA file at one, trusting none after it.
 */
function readChain(text: string, reader: Reader): { certificates: X509Certificate[] } | { problem: string } {
  const blocks = [...text.matchAll(CERTIFICATE_BEGIN)].map((m) => ({ start: m.index, begin: m[0], label: m[1]! }));
  const starts = blocks.map((b) => b.start);
  const certificates: X509Certificate[] = [];
  for (const [i, { start, begin, label }] of blocks.entries()) {
    const endMarker = `-----END ${label}-----`;
    const end = text.indexOf(endMarker, start);
    const which = `certificate ${i + 1} of ${starts.length}`;
    if (end < 0 || (starts[i + 1] ?? Infinity) < end) return { problem: `${which} has no ${endMarker} line` };
    for (const [marker, at] of [[begin, start], [endMarker, end]] as const) {
      const extra = besideMarker(text, at, marker.length, reader === 'node-tls');
      if (extra !== undefined) return { problem: `${which}: its ${marker} line has ${extra}; ${READER_NAME[reader]} reads only a line holding just that marker` };
    }
    // `openssl x509 -trustout` writes one; uWS left such an intermediate out of every handshake
    // (clients: "unable to get local issuer certificate") while these checks passed it.
    if (reader === 'https-server' && i > 0 && label === TRUSTED) {
      return { problem: `${which} is a ${TRUSTED} (with OpenSSL trust settings), which the HTTPS server leaves out of the chain it sends; write it as a plain certificate (openssl x509 -in ca.crt -out plain.crt)` };
    }
    try {
      certificates.push(new X509Certificate(text.slice(start, end + endMarker.length)));
    } catch (e) {
      return { problem: `${which} is not a valid certificate (${message(e)})` };
    }
  }
  return { certificates };
}

/** The first certificate of the chain signed with a digest TLS clients refuse, named with its algorithm. */
function weakSignatureIn(chain: X509Certificate[]): string | undefined {
  for (const [i, certificate] of chain.entries()) {
    const weak = weakSignatureOf(certificate);
    if (weak !== undefined) return `${chain.length > 1 ? `certificate ${i + 1} of ${chain.length} (${certificate.subject.replace(/\n/g, ', ')})` : 'it'} is signed with ${weak}`;
  }
  return undefined;
}

/**
 * The HTTPS files of `config.Server`, checked: undefined when HTTPS is off (no certificate path).
 * Throws ConfigError when a file is missing or unreadable, is not PEM, the key is encrypted, of a kind
 * TLS cannot serve with or does not belong to the certificate, or HttpsRedirect is on without a certificate.
 */
export function loadTlsFiles(server: AppConfig['Server']): TlsFiles | undefined {
  const { Path: certPath, KeyPath: keyPath } = server.Certificate;
  if (!certPath) {
    const problems: string[] = [];
    if (keyPath) problems.push(`${KEY_KEY}: is set but ${CERT_KEY} is empty; set both (or neither, for no HTTPS)`);
    if (server.HttpsRedirect) problems.push(`Server.HttpsRedirect: is true but ${CERT_KEY} is empty; HTTPS needs a certificate`);
    if (problems.length > 0) throw new ConfigError(problems);
    return undefined;
  }
  if (server.HttpsPort !== 0 && server.HttpsPort === server.Port) {
    throw new ConfigError([`Server.HttpsPort: ${server.HttpsPort} is also Server.Port; HTTP and HTTPS need a port each`]);
  }
  const certFile = path.resolve(certPath);
  const keyFile = path.resolve(keyPath || certPath);
  const keyName = keyPath ? KEY_KEY : `${CERT_KEY} (no ${KEY_KEY}: the key is read from the certificate file)`;

  const cert = readPem(certFile, CERT_KEY);
  const key = keyFile === certFile ? cert : readPem(keyFile, keyName);
  const problems = [cert, key].flatMap((r) => ('problem' in r ? [r.problem] : []));
  if (problems.length > 0) throw new ConfigError([...new Set(problems)]);
  const certText = (cert as { text: string }).text;
  const keyText = (key as { text: string }).text;

  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(certText);
  } catch (e) {
    throw new ConfigError([`${CERT_KEY}: ${certFile} is not a PEM certificate (${message(e)})`]);
  }
  const chain = readChain(certText, 'https-server');
  if ('problem' in chain) throw new ConfigError([`${CERT_KEY}: ${certFile}: ${chain.problem}`]);
  let privateKey: KeyObject;
  try {
    if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(keyText)) {
      throw new Error('the key is encrypted; store it unencrypted (openssl pkey -in key.pem -out plain.pem), readable only by the service');
    }
    const begin = /-----BEGIN ([A-Z ]*PRIVATE KEY)-----/.exec(keyText);
    if (!begin) throw new Error('no PEM private key in it');
    const endMarker = `-----END ${begin[1]!}-----`;
    const end = keyText.indexOf(endMarker, begin.index);
    for (const [marker, at] of [[begin[0], begin.index], [endMarker, end]] as const) {
      const extra = at < 0 ? undefined : besideMarker(keyText, at, marker.length);
      if (extra !== undefined) throw new Error(`its ${marker} line has ${extra}; the HTTPS server reads only a line holding just that marker`);
    }
    privateKey = createPrivateKey(keyText);
    const unservable = unservableKey(privateKey);
    if (unservable) throw new Error(unservable);
  } catch (e) {
    throw new ConfigError([`${keyName}: ${keyFile} holds no usable private key: ${message(e)}`]);
  }
  if (!x509.checkPrivateKey(privateKey)) {
    // A chain written in the wrong order (`cat intermediate.crt server.crt`) holds the key's certificate,
    // just not first, where the HTTPS server takes the one it serves from: say so rather than "not a pair".
    const at = chain.certificates.findIndex((c) => c.checkPrivateKey(privateKey));
    if (at > 0) {
      const n = chain.certificates.length;
      throw new ConfigError([`${CERT_KEY}: ${certFile}: the private key in ${keyFile} belongs to certificate ${at + 1} of ${n} (${chain.certificates[at]!.subject.replace(/\n/g, ', ')}), not to the first; put the server certificate first, then the intermediates that signed it (cat server.crt intermediate.crt > chain.crt)`]);
    }
    throw new ConfigError([`${keyName}: the private key in ${keyFile} does not belong to the certificate in ${certFile}`]);
  }
  // Read just now, so it exists; what matters is the bits for "others" (docs/https.md installs it 0640).
  const keyMode = statSync(keyFile).mode & 0o777;
  const rsaBits = rsaBitsOf(privateKey) ?? ACCEPTED_RSA_BITS;
  const weakSignature = weakSignatureIn(chain.certificates);
  return {
    ...((keyMode & 0o004) !== 0 ? { keyReadableByOthers: keyMode } : {}),
    ...(rsaBits < ACCEPTED_RSA_BITS ? { weakRsaBits: rsaBits } : {}),
    ...(weakSignature !== undefined ? { weakSignature } : {}),
    certFile,
    keyFile,
    subject: x509.subject.replace(/\n/g, ', '),
    validFrom: new Date(x509.validFrom),
    validTo: new Date(x509.validTo),
    names: x509.subjectAltName ?? '(no subjectAltName)',
  };
}

/** The PEM bytes of `VoiceService.CaFile`, checked to hold a certificate; undefined when not set. */
export function loadCaFile(caFile: string): Buffer | undefined {
  if (!caFile) return undefined;
  const file = path.resolve(caFile);
  const key = 'VoiceService.CaFile';
  let bytes: Buffer;
  try {
    bytes = readBoundedFile(file, MAX_PEM_BYTES);
  } catch (e) {
    throw new ConfigError([`${key}: cannot read ${file}: ${unreadableReason((e as NodeJS.ErrnoException).code, MAX_PEM_BYTES, 'a certificate file')}`]);
  }
  try {
    new X509Certificate(bytes);
  } catch (e) {
    throw new ConfigError([`${key}: ${file} is not a PEM certificate (${message(e)})`]);
  }
  // Node's TLS reads all of them, up to the first it cannot: a CA after that one was not trusted.
  const all = readChain(bytes.toString('utf8'), 'node-tls');
  if ('problem' in all) throw new ConfigError([`${key}: ${file}: ${all.problem}`]);
  return bytes;
}
