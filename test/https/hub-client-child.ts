// A device in a child process: the official @microsoft/signalr client joins a voice session at the
// hub URL given (http:// or https://; for https the CA comes from NODE_EXTRA_CA_CERTS, as on a real
// device), prints each event as one JSON line, and on stdin `send <base64>` sends that audio.
// Usage: node --import tsx hub-client-child.ts <hubUrl> <sessionId> <deviceToken>
import * as signalR from '@microsoft/signalr';
import { createInterface } from 'node:readline';

const [hubUrl, sessionId, token] = process.argv.slice(2) as [string, string, string];
const print = (event: string, ...args: unknown[]): void => {
  process.stdout.write(JSON.stringify({ event, args }) + '\n');
};
// Never outlive the test that started it.
setTimeout(() => process.exit(3), 60_000).unref();

const hub = new signalR.HubConnectionBuilder()
  .withUrl(hubUrl, { transport: signalR.HttpTransportType.WebSockets })
  .configureLogging(signalR.LogLevel.None)
  .build();
for (const name of ['SessionJoined', 'AudioProcessed', 'AudioResponse', 'Error', 'SessionEnded']) {
  hub.on(name, (...args: unknown[]) => print(name, ...args));
}

try {
  await hub.start();
  await hub.invoke('JoinSession', sessionId, token);
  print('ready');
} catch (e) {
  print('failed', e instanceof Error ? e.message : String(e));
  process.exit(2);
}

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.startsWith('send ')) {
    hub.send('SendAudioData', sessionId, line.slice(5)).catch((e: unknown) => print('failed', String(e)));
  } else if (line === 'quit') {
    void hub.stop().finally(() => process.exit(0));
  }
});
process.stdin.on('end', () => void hub.stop().finally(() => process.exit(0)));
