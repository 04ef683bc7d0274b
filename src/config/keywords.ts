// The schema's own vocabulary for ajv: the `ws-url` and `origin` formats and the `x-timespan` and `x-expected` keywords.
// Both validators that read the schema's nodes, the configuration's and the request bodies', declare it
// through this one function, so a time span means the same in a file and in PUT /api/config/device.
import type { Ajv, SchemaValidateFunction } from 'ajv';
import { isOrigin, isTimeSpanWithin, isWebSocketUrl, type TimeSpanBounds } from './schema.js';

const timeSpanWithin: SchemaValidateFunction = (bounds: TimeSpanBounds, data: string): boolean => {
  if (isTimeSpanWithin(data, bounds)) return true;
  // The validation code ajv generates reads this right after the call.
  timeSpanWithin.errors = [
    { keyword: 'x-timespan', message: `must be a time span from ${bounds.minimum} to ${bounds.maximum}`, params: { ...bounds } },
  ];
  return false;
};

export function addSchemaVocabulary(ajv: Ajv): void {
  ajv.addFormat('ws-url', { type: 'string', validate: isWebSocketUrl });
  ajv.addFormat('origin', { type: 'string', validate: isOrigin });
  ajv.addKeyword({ keyword: 'x-timespan', type: 'string', schemaType: 'object', validate: timeSpanWithin, errors: true });
  ajv.addKeyword({ keyword: 'x-expected', schemaType: 'string' });
}
