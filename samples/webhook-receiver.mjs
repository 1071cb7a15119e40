#!/usr/bin/env node
// A throwaway webhook receiver for trying webhooks locally (README "Webhooks"): listens on
// 127.0.0.1 (port: first argument, default 0 = any free one), answers 204 to every POST, and keeps
// each delivery as it arrived in a folder (second argument, default ./webhook-deliveries):
// <n>.body (the raw body, byte for byte) and <n>.headers (JSON), so that `kb webhooks verify`
// (or your own code) can check them. Prints its URL on the first line of stdout; stops on SIGTERM.
// `npm start` allows deliveries to loopback addresses over http (WEBHOOK_ALLOW_PRIVATE and
// WEBHOOK_ALLOW_HTTP); a production server does not: use a public https URL there.
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const port = Number(process.argv[2] ?? 0);
const dir = path.resolve(process.argv[3] ?? 'webhook-deliveries');
mkdirSync(dir, { recursive: true });
let n = 0;
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const i = ++n;
    writeFileSync(path.join(dir, `${i}.body`), Buffer.concat(chunks));
    writeFileSync(path.join(dir, `${i}.headers`), JSON.stringify(req.headers, null, 2));
    process.stderr.write(`webhook-receiver: ${req.method} ${req.url} ${req.headers['webhook-id'] ?? ''} → ${path.join(dir, `${i}.body`)}\n`);
    res.writeHead(204).end();
  });
});
server.listen(port, '127.0.0.1', () => console.log(`http://127.0.0.1:${server.address().port}/hooks`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
