import { DOCUMENTS_STREAM, ProcessDeadLetterEvent, Subjects } from '@kb/events';
import { connect, NatsConnection } from 'nats';
import { readFileSync } from 'node:fs';
import path from 'node:path';

jest.setTimeout(120_000);

/**
 * Poison messages on `documents.process.requested` end on `documents.process.dead_letter` (kept in
 * the KB_DOCUMENTS stream for operators) instead of being retried forever or dropped silently:
 * a payload of the wrong shape at once, a payload that cannot even be parsed after the bounded
 * number of deliveries (JetStream's max-deliveries advisory).
 */
describe('ingestion dead letters', () => {
  let nc: NatsConnection;

  beforeAll(async () => {
    const stack = JSON.parse(readFileSync(path.join(process.env.KB_E2E_DATA_DIR!, 'stack.json'), 'utf8'));
    nc = await connect({ servers: `nats://127.0.0.1:${stack.ports.nats}` });
  });
  afterAll(() => nc?.close());

  async function waitForDeadLetter(pred: (l: ProcessDeadLetterEvent) => boolean, timeoutMs: number): Promise<ProcessDeadLetterEvent> {
    const jsm = await nc.jetstreamManager();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const info = await jsm.streams.info(DOCUMENTS_STREAM);
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
        const m = await jsm.streams.getMessage(DOCUMENTS_STREAM, { seq }).catch(() => null);
        if (m?.subject !== Subjects.processDeadLetter) continue;
        const letter = JSON.parse(Buffer.from(m.data).toString('utf8')) as ProcessDeadLetterEvent;
        if (pred(letter)) return letter;
      }
      if (Date.now() > deadline) throw new Error('no such dead letter');
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  it('dead-letters a request of the wrong shape at once, and an unparseable one after the bounded deliveries', async () => {
    const js = nc.jetstream();
    const marker = `poison-${Date.now()}`;
    await js.publish(Subjects.processRequested, Buffer.from(JSON.stringify({ documentId: 'not-a-uuid', marker })));
    const garbage = await js.publish(Subjects.processRequested, Buffer.from(`{not json ${marker}`));

    const shape = await waitForDeadLetter((l) => l.payload.includes(marker) && l.reason.startsWith('malformed payload:'), 30_000);
    expect(shape.reason).toMatch(/documentId/);
    expect(shape.documentId).toBeNull();

    const parsed = await waitForDeadLetter((l) => l.streamSequence === garbage.seq, 90_000);
    expect(parsed).toMatchObject({ subject: Subjects.processRequested, deliveries: 3, payload: `{not json ${marker}` });
  });
});
