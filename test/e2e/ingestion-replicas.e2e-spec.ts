import { ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { api, corpusFile, newOrg, ROOT, uploadFile, waitForDocument, freePort, stopChild } from './support/harness';

jest.setTimeout(300_000);

type LogLine = { msg: string; document_id?: string };
const logOf = (file: string): LogLine[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));

/**
 * Several ingestion replicas share the work: a second ingestion process on the same JetStream
 * durable consumer takes documents too, and each document is processed by exactly one of them.
 */
describe('ingestion replicas', () => {
  const dataDir = process.env.KB_E2E_DATA_DIR!;
  const replicaLog = path.join(dataDir, 'logs', 'ingestion-replica.log');
  let replica: ChildProcess;

  beforeAll(async () => {
    const stack = JSON.parse(readFileSync(path.join(dataDir, 'stack.json'), 'utf8'));
    const secrets = JSON.parse(readFileSync(path.join(dataDir, 'secrets.json'), 'utf8'));
    const log = createWriteStream(replicaLog, { flags: 'a' });
    replica = spawn(process.execPath, [path.join(ROOT, 'dist/apps/ingestion/src/main.js')], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        NODE_ENV: 'production',
        LOG_LEVEL: 'info',
        NATS_URL: `nats://127.0.0.1:${stack.ports.nats}`,
        GRPC_HOST: '127.0.0.1',
        INGESTION_GRPC_PORT: String(await freePort()),
        RETRIEVAL_GRPC_URL: `127.0.0.1:${stack.ports.retrieval}`,
        STORAGE_DRIVER: 'local',
        STORAGE_LOCAL_DIR: path.join(dataDir, 'objects'),
        STORAGE_SIGNING_SECRET: secrets.storageSigningSecret,
        INGESTION_WORK_DIR: path.join(dataDir, 'work-replica'),
        INGESTION_CONCURRENCY: '1',
        OTEL_SDK_DISABLED: 'true',
      },
    });
    replica.stdout!.pipe(log);
    replica.stderr!.pipe(log);
    // Ready once it has joined the consumer (it logs "started" after that).
    for (let i = 0; i < 300 && !(existsSync(replicaLog) && readFileSync(replicaLog, 'utf8').includes('"msg":"started"')); i++)
      await new Promise((r) => setTimeout(r, 100));
  });

  afterAll(async () => {
    if (replica) await stopChild(replica);
  });

  it('spreads documents over both replicas, each processed once', async () => {
    expect(replica.exitCode).toBeNull();
    const { key } = newOrg('Replicas Org');
    const files = [
      'pdf/OSHA2001.pdf',
      'pdf/fedramp_guide_poam_rev5.pdf',
      'pdf/fedramp_guide_sar_rev5.pdf',
      'pdf/debian-fhs-3.0.pdf',
      'pdf/fedramp_data_bites_slides_2022-09-01.pdf',
      'pdf/fedramp_extensions_rev4.pdf',
    ];
    const ids: string[] = [];
    for (const f of files) ids.push(await uploadFile(key, { path: corpusFile(f) }));
    const res = await api(key).post('/api/v2/documents/process').send({ document_ids: ids });
    expect(res.body.data.processed).toHaveLength(ids.length);
    for (const id of ids) expect((await waitForDocument(key, id, 240_000)).status).toBe('completed');

    const processedBy = (file: string) =>
      new Set(
        logOf(file)
          .filter((l) => l.msg === 'document processed' && ids.includes(l.document_id!))
          .map((l) => l.document_id),
      );
    const main = processedBy(path.join(dataDir, 'logs', 'ingestion.log'));
    const second = processedBy(replicaLog);
    expect(second.size).toBeGreaterThan(0);
    expect(main.size).toBeGreaterThan(0);
    expect([...main].filter((id) => second.has(id))).toEqual([]);
    expect(main.size + second.size).toBe(ids.length);
  });
});
