import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A running scripted OpenAI-protocol server (test helper). */
export interface ScriptedHttpServer {
  /** Base URL to configure as the provider's base URL, ending in `/v1`. */
  baseUrl: string;
  close(): Promise<void>;
}

/**
 * The HTTP plumbing shared by the scripted OpenAI-protocol servers: listens on a free loopback
 * port, answers 404 to anything but `POST …<pathSuffix>`, parses the JSON body and hands it to
 * `handle`, turns a thrown error into a 500, and closes with its connections.
 */
export async function startScriptedHttpServer(
  pathSuffix: string,
  handle: (body: unknown, res: http.ServerResponse) => Promise<void>,
): Promise<ScriptedHttpServer> {
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith(pathSuffix)) {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found' } }));
        return;
      }
      handle(JSON.parse(Buffer.concat(parts).toString('utf8')), res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(error) } }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Answers with the OpenAI-style error body of a scripted HTTP error `status`. */
export function sendScriptedError(res: http.ServerResponse, status: number): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message: `scripted error ${status}`, type: 'scripted' } }));
}
