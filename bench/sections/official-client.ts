// The flow the raw load clients drive, run once per protocol with the official @microsoft/signalr
// client (as devices use it): two members join a session, one sends Opus packets, the other gets
// AudioProcessed for each and the decoded audio back as AudioResponse.
import { HubConnectionBuilder, LogLevel, type HubConnection } from '@microsoft/signalr';
import { MessagePackHubProtocol } from '@microsoft/signalr-protocol-msgpack';
import type { Session } from '../lib/api.js';
import type { Row } from '../lib/report.js';
import { fixturePackets } from '../load/common.js';

const PACKETS = 20;

async function connect(url: string, protocol: 'json' | 'messagepack'): Promise<HubConnection> {
  let builder = new HubConnectionBuilder().withUrl(`${url}/voice-hub`).configureLogging(LogLevel.None);
  if (protocol === 'messagepack') builder = builder.withHubProtocol(new MessagePackHubProtocol());
  const connection = builder.build();
  await connection.start();
  return connection;
}

async function verify(url: string, session: Session, protocol: 'json' | 'messagepack'): Promise<void> {
  const a = await connect(url, protocol);
  const b = await connect(url, protocol);
  try {
    const errors: string[] = [];
    let processed = 0;
    const pcmBytes: number[] = [];
    for (const c of [a, b]) c.on('Error', (m: string) => errors.push(m));
    a.on('AudioProcessed', () => {});
    a.on('AudioResponse', () => {});
    a.on('AudioData', () => {});
    b.on('AudioProcessed', (p: { sequence: number }) => {
      if (typeof p.sequence === 'number') processed++;
    });
    b.on('AudioResponse', (pcm: string) => pcmBytes.push(Buffer.from(pcm, 'base64').length));
    b.on('AudioData', () => {});
    let joined = 0;
    for (const c of [a, b]) c.on('SessionJoined', () => joined++);
    await a.invoke('JoinSession', session.sessionId, session.token);
    await b.invoke('JoinSession', session.sessionId, session.token);
    if (joined !== 2) throw new Error(`SessionJoined ${joined} times, expected 2; errors: ${errors.join('; ')}`);
    for (const p of fixturePackets().slice(0, PACKETS)) {
      await a.send('SendAudioData', session.sessionId, protocol === 'json' ? p : new Uint8Array(Buffer.from(p, 'base64')));
    }
    const deadline = Date.now() + 10_000;
    while ((processed < PACKETS || pcmBytes.length < PACKETS) && errors.length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    if (errors.length > 0) throw new Error(`official ${protocol} client got Error: ${errors.join('; ')}`);
    if (processed !== PACKETS || pcmBytes.length !== PACKETS) {
      throw new Error(`official ${protocol} client: ${processed} AudioProcessed and ${pcmBytes.length} AudioResponse of ${PACKETS}`);
    }
    // 20 ms at 16 kHz mono, 16-bit: 640 bytes of PCM per packet.
    if (pcmBytes.some((n) => n !== 640)) throw new Error(`official ${protocol} client: AudioResponse sizes ${pcmBytes.join(',')}`);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
}

export async function verifyWithOfficialClient(url: string, sessions: Session[]): Promise<Row> {
  await verify(url, sessions[0]!, 'json');
  await verify(url, sessions[1]!, 'messagepack');
  return {
    section: '3',
    name: 'official @microsoft/signalr client, same flow (JSON + MessagePack)',
    value: 2 * PACKETS,
    unit: 'packets ok',
    note: `two official clients per protocol: ${PACKETS} SendAudioData -> ${PACKETS} AudioProcessed + ${PACKETS} AudioResponse of 640 bytes at member 2`,
  };
}
