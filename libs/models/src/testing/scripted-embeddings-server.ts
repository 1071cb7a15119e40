import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the script answers for one embeddings request: vectors, or an HTTP error `status`. */
export interface ScriptedEmbeddingsReply {
  vectors?: number[][];
  status?: number;
}

/** A running scripted embeddings server. */
export interface ScriptedEmbeddingsServer {
  /** Base URL to configure as `EMBEDDINGS_BASE_URL`, ending in `/v1`. */
  baseUrl: string;
  /** Every request body received, in order. */
  requests: { model: string; input: string[] }[];
  close(): Promise<void>;
}

/**
 * A real HTTP server speaking the OpenAI embeddings protocol (`POST …/embeddings`), answering from
 * a script. For tests of the dense paths: no embedding model runs on the test machines; the
 * protocol and the HTTP client are exercised for real.
 */
export async function startScriptedEmbeddingsServer(
  respond: (body: { model: string; input: string[] }, callIndex: number) => ScriptedEmbeddingsReply | Promise<ScriptedEmbeddingsReply>,
): Promise<ScriptedEmbeddingsServer> {
  const requests: { model: string; input: string[] }[] = [];
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      void (async () => {
        if (req.method !== 'POST' || !req.url?.endsWith('/embeddings')) {
          res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found' } }));
          return;
        }
        const raw = JSON.parse(Buffer.concat(parts).toString('utf8')) as { model: string; input: string | string[] };
        const body = { model: raw.model, input: Array.isArray(raw.input) ? raw.input : [raw.input] };
        requests.push(body);
        const reply = await respond(body, requests.length - 1);
        if (reply.status && reply.status >= 400) {
          res.writeHead(reply.status, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: `scripted error ${reply.status}`, type: 'scripted' } }));
          return;
        }
        const vectors = reply.vectors ?? [];
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            object: 'list',
            model: body.model,
            data: vectors.map((embedding, index) => ({ object: 'embedding', index, embedding })),
            usage: { prompt_tokens: body.input.length, total_tokens: body.input.length },
          }),
        );
      })().catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(error) } }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
