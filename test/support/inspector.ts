// A full garbage collection in another Node process, through the inspector it opened on loopback
// (`--inspect=127.0.0.1:0`, which prints "Debugger listening on ws://..."). Memory checks read RSS
// after it, so they measure what the process keeps, not when V8 last felt like collecting.
import WebSocket from 'ws';

export const INSPECT_FLAG = '--inspect=127.0.0.1:0';

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Sends one inspector command to the process whose stderr so far is `output`; resolves with its result. */
async function inspectorCall(output: string, method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const url = /Debugger listening on (ws:\/\/127\.0\.0\.1:\d+\/[\w-]+)/.exec(output)?.[1];
  if (!url) throw new Error(`the process announced no inspector:\n${output.slice(0, 2000)}`);
  const ws = new WebSocket(url);
  await within(new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject)), 5000, 'inspector connection');
  try {
    const done = new Promise<Record<string, unknown>>((resolve, reject) => {
      ws.on('message', (data) => {
        const reply = JSON.parse(String(data)) as { id?: number; result?: Record<string, unknown>; error?: { message: string } };
        if (reply.id !== 1) return;
        if (reply.error) reject(new Error(`${method}: ${reply.error.message}`));
        else resolve(reply.result ?? {});
      });
    });
    ws.send(JSON.stringify({ id: 1, method, params }));
    return await within(done, 10_000, method);
  } finally {
    ws.close();
  }
}

/** A full garbage collection; `output` is the process's stderr so far (where Node announces the inspector). */
export async function collectGarbage(output: string): Promise<void> {
  await inspectorCall(output, 'HeapProfiler.collectGarbage');
}

/** The JSON value of `expression` evaluated in the process's main context (e.g. `process.memoryUsage()`). */
export async function evaluate(output: string, expression: string): Promise<unknown> {
  const result = await inspectorCall(output, 'Runtime.evaluate', { expression, returnByValue: true });
  if (result.exceptionDetails) throw new Error(`evaluating ${expression} threw: ${JSON.stringify(result.exceptionDetails).slice(0, 500)}`);
  return (result.result as { value?: unknown } | undefined)?.value;
}
