// What the schemas' own vocabulary checks with at run time: the `x-timespan` keyword and the `ws-url`
// and `origin` formats. Both forms of the validators call these same functions: those ajv compiles
// (tests) through references, the standalone code in the bundle through this module's export (the
// names ajv.ts writes into that code). So a time span means the same in a configuration file, in
// PUT /api/config/device and in either form.
import { isOrigin, isTimeSpanWithin, isWebSocketUrl } from './schema.js';

export const vocabulary = {
  isTimeSpanWithin,
  formats: {
    'ws-url': { type: 'string', validate: isWebSocketUrl },
    origin: { type: 'string', validate: isOrigin },
  },
} as const;
