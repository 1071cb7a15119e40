import { readFileSync } from 'node:fs';
import path from 'node:path';
import { api, corpusFile, newOrg, processDocuments, serviceLog, serviceLogSize, takeoversAfterKills, uploadFile, waitForDocument } from './support/harness';

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
  /** Chunks stored for a document (the chunk listing's total): a duplicate write would show here. */
  const storedChunks = async (key: string, id: string) => (await api(key).get(`/api/v2/documents/${id}/chunks?limit=1`)).body.pagination.total as number;

  it('finishes a document whose worker was killed mid-way, with the right chunk count', async () => {
    const { key } = newOrg('Crash Org');
    // The FHS as a PDF (249 KB, 50 pages): seconds of work, so the kill lands mid-document, and a
    // fifth of the Debian Policy PDF's time in each of the two runs below.
    const file = corpusFile('pdf/debian-fhs-3.0.pdf');

    // Reference run without a crash.
    const reference = await uploadFile(key, { path: file, name: 'reference.pdf' });
    const [expected] = await processDocuments(key, [reference], 300_000);

    const crashed = await uploadFile(key, { path: file, name: 'crashed.pdf' });
    const before = ingestionPid();
    const logFrom = serviceLogSize('ingestion');
    await api(key)
      .post('/api/v2/documents/process')
      .send({ document_ids: [crashed] });
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

    // No duplicate chunks: the stored chunks are the reference's count, and a query never quotes the
    // same sentence twice (a duplicated chunk would be cited under both of its ids).
    expect(await storedChunks(key, crashed)).toBe(expected.chunk_count);
    const res = await api(key)
      .post('/api/v2/agent/query')
      .send({ question: 'What is the /var/tmp directory for?', document_ids: [crashed], top_k: 20 });
    const quotes = res.body.data.citations.map((c: any) => c.quote);
    expect(new Set(quotes).size).toBe(quotes.length);
    expect(res.body.data.citations.length).toBeGreaterThan(0);
  });

  it('four kills of the ingestion worker within 10 s: every document completes once, with the right chunk count, none stuck', async () => {
    const { key } = newOrg('Four Kills Org');
    // 112 KB of text: a few seconds of work each (extraction, chunking, embedding), so documents are
    // mid-way at the kills. Two documents, INGESTION_CONCURRENCY: a redelivered one waits for a
    // worker, not behind other documents (with four, the last two waited ~35 s for a free slot of the
    // one worker, which is queueing, not takeover).
    const file = corpusFile('txt/debian-fhs-3.0.txt');
    const reference = await uploadFile(key, { path: file, name: 'fhs-reference.txt' });
    const [expected] = await processDocuments(key, [reference], 120_000);
    const expectedStored = await storedChunks(key, reference);
    expect(expectedStored).toBe(expected.chunk_count);

    const ids: string[] = [];
    for (let i = 0; i < 2; i++) ids.push(await uploadFile(key, { path: file, name: `fhs-${i}.txt` }));
    const logFrom = serviceLogSize('ingestion');
    await api(key).post('/api/v2/documents/process').send({ document_ids: ids });
    await waitForLog((l) => l.msg === 'processing document' && ids.includes(l.document_id!), logFrom);
    // Kills 3.2 s apart (0, 3.2, 6.4, 9.6 s), each of the worker running then (the launcher restarts
    // the first 5 crashes in a row after 0.5 s).
    const kills: { pid: number; at: number }[] = [];
    for (let k = 0; k < 4; k++) {
      if (k > 0) {
        await waitForNewPid(kills[k - 1].pid);
        while (Date.now() < kills[0].at + 3200 * k) await new Promise((r) => setTimeout(r, 50));
      }
      const pid = ingestionPid();
      kills.push({ pid, at: Date.now() });
      process.kill(pid, 'SIGKILL');
    }
    expect(kills[3].at - kills[0].at).toBeLessThan(10_000);
    await waitForNewPid(kills[3].pid);

    for (const id of ids) {
      const doc = await waitForDocument(key, id, 120_000);
      expect([doc.status, doc.chunk_count]).toEqual(['completed', expected.chunk_count]);
      expect(await storedChunks(key, id)).toBe(expectedStored);
    }
    const doneMs = Date.now() - kills[3].at;
    const log = serviceLog('ingestion', logFrom);
    // The deliveries (stream_seq: the stream message; delivery_seq: the consumer's delivery), for
    // reading a failure: a duplicate delivery waits for the run in progress (runConsumer singleFlightKey).
    const trace = log.filter(
      (l) => ids.includes((l.document_id ?? l.key) as string) && /processing document|document processed|duplicate delivery/.test(l.msg),
    );
    console.log(
      trace
        .map((l) => `${l.time} ${l.document_id ?? l.key} attempt ${l.attempt} stream_seq ${l.stream_seq} delivery_seq ${l.delivery_seq}: ${l.msg}`)
        .join('\n'),
    );
    // Each document finished exactly once (a second `document processed` would be a second write).
    for (const id of ids) expect(log.filter((l) => l.msg === 'document processed' && l.document_id === id)).toHaveLength(1);
    // Takeovers: a document started again after a kill was interrupted by it (the first kill between
    // its two starts); the pause is that kill → the next start.
    const { takeovers, perKill } = takeoversAfterKills(
      ids.map((id) => log.filter((l) => l.msg === 'processing document' && l.document_id === id).map((l) => Date.parse(l.time!))),
      kills,
    );
    expect(takeovers.length).toBeGreaterThan(0);
    const longest = Math.max(...takeovers);
    // README "Crash recovery" keeps the measured figures.
    console.log(
      `takeover pause (ingestion, four kills in 10 s): the longest ${longest} ms (all: ${takeovers.join(', ')} ms; documents interrupted per kill: ${perKill.join(', ')}); ` +
        `the documents completed ${doneMs} ms after the last kill`,
    );
  });
});
