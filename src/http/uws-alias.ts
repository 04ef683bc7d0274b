// Bundle-only stand-in for the `uWebSockets.js` package (build.mjs aliases the package name to this
// file), so no import anywhere can reach the package's own loader and its silent JS fallback.
import { loadNativeUws } from './uws-native.js';

const uws = loadNativeUws({ bundleDir: typeof __dirname === 'string' ? __dirname : undefined }).uws;
export default uws;
