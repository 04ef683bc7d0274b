// The ceiling (issue 6, benchmark 1): a bare uWebSockets.js server with the same native addon the
// service loads, doing nothing but a WebSocket echo at /echo and a "hello" HTTP route. Every other
// figure is read against what this does on the same machine in the same run.
// Usage: node ceiling-server.cjs <bundleDir> [port]; prints "listening on http://127.0.0.1:<port>".
import { loadNativeUws } from '../../src/http/uws-native.js';

const bundleDir = process.argv[2];
const { uws } = loadNativeUws({ bundleDir });
const app = uws.App();

app.ws('/echo', {
  maxPayloadLength: 16 * 1024 * 1024,
  idleTimeout: 0,
  message: (ws, message, isBinary) => {
    ws.send(message, isBinary, false);
  },
});
app.get('/hello', (res) => {
  res.writeHeader('Content-Type', 'text/plain').end('hello');
});
// The start-up baseline polls the same path as the service's.
app.get('/health', (res) => {
  res.writeHeader('Content-Type', 'text/plain').end('Healthy');
});
app.any('/*', (res) => {
  res.writeStatus('404 Not Found').end();
});

app.listen('127.0.0.1', Number(process.argv[3] ?? 0), (socket) => {
  if (!socket) {
    process.stderr.write('listen failed\n');
    process.exit(1);
  }
  process.stdout.write(`listening on http://127.0.0.1:${uws.us_socket_local_port(socket)}\n`);
});
process.on('SIGTERM', () => process.exit(0));
