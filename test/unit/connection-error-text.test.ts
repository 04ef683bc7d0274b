// What a failed connection to the voice server or the MQTT broker is reported as: one readable line.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectionErrorText } from '../../src/errors.js';
import { untrustedCertificateHint } from '../../src/cli/untrusted-certificate.js';

test('a happy-eyeballs failure (localhost -> ::1 and 127.0.0.1) names each address, not the empty message of its AggregateError', () => {
  const e = new AggregateError([new Error('connect ECONNREFUSED ::1:5050'), new Error('connect ECONNREFUSED 127.0.0.1:5050')], '');
  assert.equal(connectionErrorText(e), 'connect ECONNREFUSED ::1:5050; connect ECONNREFUSED 127.0.0.1:5050');
  assert.equal(connectionErrorText(new AggregateError([new Error('x'), new Error('x')], '')), 'x');
  assert.equal(connectionErrorText(new AggregateError([], '')), 'connection failed');
});

test("OpenSSL's error queue becomes its reason, on one line", () => {
  const wrongVersion = 'write EPROTO 80EC8EBEEF7F0000:error:0A00010B:SSL routines:ssl3_get_record:wrong version number:../deps/openssl/openssl/ssl/record/ssl3_record.c:350:\n';
  assert.equal(connectionErrorText(new Error(wrongVersion)), 'write EPROTO: TLS failed: wrong version number');
  const alert = 'C0D7E1F1:error:0A000410:SSL routines:ssl3_read_bytes:sslv3 alert handshake failure:../deps/openssl/openssl/ssl/record/rec_layer_s3.c:1590:SSL alert number 40\n';
  assert.equal(connectionErrorText(new Error(alert)), 'TLS failed: sslv3 alert handshake failure (SSL alert number 40)');
});

test('other errors as they are, trimmed; an error without a message by its name', () => {
  assert.equal(connectionErrorText(new Error('self-signed certificate')), 'self-signed certificate');
  assert.equal(connectionErrorText(new Error('Unexpected server response: 401\n')), 'Unexpected server response: 401');
  const nameless = new Error('');
  nameless.name = 'AbortError';
  assert.equal(connectionErrorText(nameless), 'AbortError');
  assert.equal(connectionErrorText('text'), 'text');
});

test("a certificate outside its validity period names the clock that judged it, this machine's", () => {
  // A Pi without a real-time clock starts in the past until NTP sets it: every wss:// voice server's
  // certificate was "not yet valid" then, which read as the server's fault.
  const now = () => new Date('1970-01-01T00:01:40.000Z');
  const early = Object.assign(new Error('certificate is not yet valid'), { code: 'CERT_NOT_YET_VALID' });
  const note = " (this machine's clock says 1970-01-01T00:01:40.000Z: if that is in the past, it is this machine that is wrong, until NTP sets its clock)";
  assert.equal(connectionErrorText(early, now), `certificate is not yet valid${note}`);
  const expired = Object.assign(new Error('certificate has expired'), { code: 'CERT_HAS_EXPIRED' });
  assert.equal(connectionErrorText(expired, now), "certificate has expired (this machine's clock says 1970-01-01T00:01:40.000Z)");
  assert.equal(connectionErrorText(new AggregateError([early, early], ''), now), `certificate is not yet valid${note}`);
  for (const code of ['constructor', '__proto__', 'toString', 'DEPTH_ZERO_SELF_SIGNED_CERT', undefined]) {
    assert.equal(connectionErrorText(Object.assign(new Error('x'), { code }), now), 'x');
  }
  assert.equal(untrustedCertificateHint(early, now), note);
  assert.equal(untrustedCertificateHint({ code: 'CERT_HAS_EXPIRED' }, now), " (this machine's clock says 1970-01-01T00:01:40.000Z)");
  assert.equal(untrustedCertificateHint(null, now), '');
});
