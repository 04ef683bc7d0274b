// What the tests that hold the running service to its document start from.
import { Ajv, type Options } from 'ajv';
import { call } from '../support/http.js';
import { adminToken } from '../support/tokens.js';
import { startVoiceRig } from '../support/voice.js';
import type { TestService } from '../support/service.js';

export interface ServedDocument {
  svc: TestService;
  /* eslint-disable-next-line @typescript-eslint/no-explicit-any */
  doc: any;
  /** Knows the document's components as `doc#/components/...`. */
  ajv: Ajv;
  admin: string;
}

/**
 * A service with the voice rig, the document it serves and an admin token. The ajv reads OpenAPI 3.0
 * (`nullable`) and ignores the `x-` keywords, which are names for readers.
 */
export async function servedDocument(ajvOptions: Options): Promise<ServedDocument> {
  const { svc } = await startVoiceRig();
  const doc = (await call(svc.url, 'GET', '/swagger/v1/swagger.json')).json;
  const ajv = new Ajv({ strict: false, allErrors: true, ...ajvOptions });
  ajv.addSchema({ components: doc.components }, 'doc');
  return { svc, doc, ajv, admin: await adminToken(svc) };
}
