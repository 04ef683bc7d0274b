// Request bodies sent as raw JSON text, as written, to an in-process service with one registered device:
// the rig of the tests on how a body's numbers are read.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import type { InjectResponse } from '../../src/http/inject.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken } from '../support/tokens.js';

export const INVALID = { title: 'One or more validation errors occurred.', detail: 'The request body is invalid.' };

export interface RawBodies {
  /** Set once the suite's `before` has run. */
  admin: string;
  device: string;
  send(method: string, url: string, text: string, token?: string): Promise<InjectResponse>;
}

/** Registers `before` (a service, an admin token, the device `registration` names) and `after` in the calling suite. */
export function rawBodies(registration: string): RawBodies {
  let svc: TestService | undefined;
  const rig: RawBodies = {
    admin: '',
    device: '',
    send: (method, url, text, token) =>
      svc!.app.inject({ method, url, body: text, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) } }),
  };
  before(async () => {
    svc = await startService();
    rig.admin = await adminToken(svc);
    const reg = await rig.send('POST', '/api/device/register', registration);
    assert.equal(reg.status, 200, reg.body);
    rig.device = (reg.json() as { deviceToken: string }).deviceToken;
  });
  after(() => svc?.stop());
  return rig;
}
