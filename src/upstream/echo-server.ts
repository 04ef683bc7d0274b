// A built-in upstream voice server that echoes (`voice-hub echo-server`, the shipped upstream): each `audio` frame
// comes back as an `audio` frame with the same Opus bytes at the session's rate and channels, `text` comes
// back as `echo: <text>`, and the text `!error <message>` makes it send an `error` frame. Any path is
// accepted. It is the upstream for tests, benchmarks and `voice-hub echo-server`, so it stays lean.
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { errorText } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { urlHost } from '../url-host.js';
import {
  encodeUpstreamAudio, encodeUpstreamError, encodeUpstreamText, parseServiceFrame,
} from './protocol.js';

export interface EchoServerOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  logger: Logger;
  /** PEM certificate and key: serve `wss://` instead of `ws://` (tests of a private-CA upstream). */
  tls?: { cert: string | Buffer; key: string | Buffer };
}

export interface EchoServer {
  readonly port: number;
  /** Open connections right now. */
  connections(): number;
  /** Cuts every connection (as a crash would, no close handshake) and stops listening. Idempotent. */
  close(): Promise<void>;
}

const ERROR_COMMAND = '!error ';

/**
 * Answers waiting for a client past this stop the server reading from it until they are down to
 * ECHO_RESUME_BYTES: a client that sends and does not read (a service whose devices stopped reading
 * paces its upstream, a test that floods) held every answer in memory, 300 MB in 10 s.
 */
const ECHO_PAUSE_BYTES = 1024 * 1024;
const ECHO_RESUME_BYTES = 256 * 1024;

export async function startEchoServer(options: EchoServerOptions): Promise<EchoServer> {
  const { logger } = options;
  const tlsServer = options.tls ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }) : undefined;
  const wss = tlsServer
    ? new WebSocketServer({ server: tlsServer, perMessageDeflate: false, maxPayload: 1024 * 1024 })
    : new WebSocketServer({ host: options.host, port: options.port, perMessageDeflate: false, maxPayload: 1024 * 1024 });
  await new Promise<void>((resolve, reject) => {
    const target = tlsServer ?? wss;
    target.once('listening', resolve);
    target.once('error', reject);
    tlsServer?.listen(options.port, options.host);
  });
  wss.on('error', (err) => logger.error(`echo server: ${errorText(err)}`));
  wss.on('connection', (socket, req) => {
    logger.debug(`echo server: connection on ${req.url ?? '/'}`);
    serve(socket, logger);
  });
  const port = ((tlsServer ?? wss).address() as AddressInfo).port;
  // The shipped configuration's path; any other is served the same.
  logger.info(`echo voice server listening on ${tlsServer ? 'wss' : 'ws'}://${urlHost(options.host)}:${port}/voice`);

  let closing: Promise<void> | undefined;
  return {
    port,
    connections: () => wss.clients.size,
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close(() => (tlsServer ? tlsServer.close(() => resolve()) : resolve()));
        tlsServer?.closeAllConnections();
      });
      return closing;
    },
  };
}

function serve(socket: WebSocket, logger: Logger): void {
  // The format announced by `start`; audio frames normally repeat it.
  let format = { sampleRate: 16000, channels: 1 };
  let paused = false;
  // Called as each answer is handed to the network: the queue behind it only shrinks.
  const written = (): void => {
    if (paused && socket.bufferedAmount <= ECHO_RESUME_BYTES) {
      paused = false;
      socket.resume();
    }
  };
  const reply = (text: string): void => {
    socket.send(text, written);
    if (!paused && socket.bufferedAmount > ECHO_PAUSE_BYTES) {
      paused = true;
      socket.pause();
    }
  };
  socket.on('error', (err) => logger.debug(`echo server: socket error: ${errorText(err)}`));
  socket.on('message', (data, isBinary) => {
    if (isBinary) return;
    const frame = parseServiceFrame(data.toString());
    if ('kind' in frame) {
      logger.debug(`echo server: ignored frame: ${frame.reason}`);
      return;
    }
    switch (frame.type) {
      case 'start':
        format = { sampleRate: frame.sampleRate, channels: frame.channels };
        break;
      case 'audio':
        reply(encodeUpstreamAudio(frame.data, format.sampleRate, format.channels));
        break;
      case 'text':
        reply(frame.text.startsWith(ERROR_COMMAND)
          ? encodeUpstreamError(frame.text.slice(ERROR_COMMAND.length))
          : encodeUpstreamText(`echo: ${frame.text}`, true));
        break;
      case 'stop':
        socket.close(1000, 'stopped');
        break;
    }
  });
}
