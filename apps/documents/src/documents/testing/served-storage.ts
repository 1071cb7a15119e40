/**
 * The real local object storage behind a real HTTP server, for the documents medium specs: the
 * presigned PUT/GET URLs it hands out work with `fetch` as they do in production.
 */
import { createLocalStorageHandler, LocalObjectStorage } from '@kb/storage';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** A {@link LocalObjectStorage} served on 127.0.0.1, and how to stop it. */
export interface ServedStorage {
  storage: LocalObjectStorage;
  /** Closes the server (and its open connections) and removes the storage folder. */
  close(): Promise<void>;
}

/**
 * Starts a local object storage in a fresh folder under the OS temporary folder (`<prefix>XXXXXX`),
 * served by an HTTP server on a free port of 127.0.0.1 that answers its presigned URLs (404 for
 * any other request). Uploads are limited to 1 MiB.
 * @param prefix the storage folder name's start, e.g. `'kb-medium-storage-'`.
 * @param signingSecret the secret the presigned URLs are signed with.
 */
export async function serveLocalStorage(prefix: string, signingSecret: string): Promise<ServedStorage> {
  const rootDir = mkdtempSync(path.join(os.tmpdir(), prefix));
  let handler: ReturnType<typeof createLocalStorageHandler> | undefined;
  const server = http.createServer((req, res) => void handler!(req, res).then((handled) => handled || res.writeHead(404).end()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const storage = new LocalObjectStorage({
    rootDir,
    publicBaseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    signingSecret,
    maxUploadBytes: 1024 * 1024,
  });
  await storage.ensureReady();
  handler = createLocalStorageHandler(storage);
  return {
    storage,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      rmSync(rootDir, { recursive: true, force: true });
    },
  };
}
