import { sendScriptedError, startScriptedHttpServer } from './scripted-http';

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
  const server = await startScriptedHttpServer('/embeddings', async (parsed, res) => {
    const raw = parsed as { model: string; input: string | string[] };
    const body = { model: raw.model, input: Array.isArray(raw.input) ? raw.input : [raw.input] };
    requests.push(body);
    const reply = await respond(body, requests.length - 1);
    if (reply.status && reply.status >= 400) return sendScriptedError(res, reply.status);
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
  });
  return { ...server, requests };
}
