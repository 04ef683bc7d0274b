// Node 20 does not pass --import hooks to worker threads: register tsx here, then load the worker.
import { register } from 'tsx/esm/api';
register();
await import('./floor-upstream-worker.ts');
