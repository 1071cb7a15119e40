import { readFileSync } from 'node:fs';
import path from 'node:path';
import { api, corpusFile, newOrg, serviceLog, serviceLogSize, uploadFile, waitForDocument } from './support/harness';

jest.setTimeout(900_000);

async function waitForLog(pred: (l: { msg: string; document_id?: string; attempt?: number }) => boolean, from: number): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (serviceLog('ingestion', from).some(pred)) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('log line not seen');
}

function ingestionPid(): number {
  return JSON.parse(readFileSync(path.join(process.env.KB_E2E_DATA_DIR!, 'pids.json'), 'utf8')).ingestion;
}

async function waitForNewPid(old: number): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const pid = ingestionPid();
    if (pid !== old) return pid;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('ingestion was not restarted');
}

/**
 * At-least-once processing: an ingestion worker killed (SIGKILL) while it processes a document
 * leaves no document in `processing` and no duplicate chunks: JetStream redelivers it to the
 * restarted worker, which replaces the chunks it may have written.
 */
describe('ingestion worker crash', () => {
  it('finishes a document whose worker was killed mid-way, with the right chunk count', async () => {
    const { key } = newOrg('Crash Org');
    const file = corpusFile('pdf/debian-policy-4.6.2.0.pdf');

    // Reference run without a crash.
    const reference = await uploadFile(key, { path: file, name: 'reference.pdf' });
    await api(key).post('/api/v2/documents/process').send({ document_ids: [reference] });
    const expected = await waitForDocument(key, reference, 300_000);
    expect(expected.status).toBe('completed');

    const crashed = await uploadFile(key, { path: file, name: 'crashed.pdf' });
    const before = ingestionPid();
    const logFrom = serviceLogSize('ingestion');
    await api(key).post('/api/v2/documents/process').send({ document_ids: [crashed] });
    await waitForLog((l) => l.msg === 'processing document' && l.document_id === crashed, logFrom);
    const killedAt = Date.now();
    process.kill(before, 'SIGKILL');
    await waitForNewPid(before);

    const doc = await waitForDocument(key, crashed, 300_000);
    expect(doc.status).toBe('completed');
    expect(doc.chunk_count).toBe(expected.chunk_count);
    // It was killed mid-document: only a later delivery finished it.
    const finished = serviceLog('ingestion', logFrom).filter((l) => l.msg === 'document processed' && l.document_id === crashed);
    expect(finished.map((l) => l.attempt)).toEqual([2]);
    // The takeover pause (kill → the restarted worker starts the redelivered document): printed, not
    // asserted (no timed assertions); docs/ingestion.md keeps the measured figure.
    const takenOver = serviceLog('ingestion', logFrom).find((l) => l.msg === 'processing document' && l.document_id === crashed && (l.attempt ?? 1) >= 2);
    expect(takenOver).toBeDefined();
    console.log(`takeover pause (ingestion, worker killed mid-document): ${Date.parse(takenOver!.time!) - killedAt} ms`);

    // No duplicate chunks: a query cites each chunk at most once, and the crashed copy answers like the reference.
    const res = await api(key).post('/api/v2/agent/query').send({ question: 'What must the maintainer field of a package contain?', document_ids: [crashed], top_k: 20 });
    const chunkIds = res.body.data.citations.map((c: any) => c.chunk_id);
    expect(new Set(chunkIds).size).toBe(chunkIds.length);
    expect(res.body.data.citations.length).toBeGreaterThan(0);
  });
});
