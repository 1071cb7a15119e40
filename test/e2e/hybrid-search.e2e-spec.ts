import { createAsyncClient } from '@kb/common';
import { retrievalV1 } from '@kb/proto';
import { api, newOrg, uploadFile, waitForDocument } from './support/harness';

jest.setTimeout(300_000);

/**
 * Hybrid search through the whole stack: documents uploaded and processed over the API are
 * embedded by the enrichment step (the e2e stack loads the real MiniLM model from
 * ../shared/models), so a question worded with none of a document's words still finds it. The
 * retrieval service's Search RPC is called directly (the API has no raw search endpoint): it is
 * what the agent and check services call.
 */
describe('hybrid search end to end (local embedding model)', () => {
  const orgA = newOrg('E2E Hybrid A');
  const orgB = newOrg('E2E Hybrid B');
  const retrieval = createAsyncClient(retrievalV1.RetrievalServiceService, process.env.KB_E2E_RETRIEVAL_GRPC_URL!);
  const ids: Record<string, string> = {};
  const DOCS: Record<string, string> = {
    'hard-hats.md': '# Head protection\n\nHard hats must be worn at all times by everyone on the construction site.\n',
    'cafeteria.md': '# Canteen\n\nThe cafeteria serves lunch from noon until two in the afternoon.\n',
    'invoices.md': '# Accounts payable\n\nInvoices are paid within thirty days of receipt by the accounts department.\n',
    'extinguishers.md': '# Fire equipment\n\nFire extinguishers are inspected every month and tagged with the date.\n',
  };
  /** Shares no word (nor stem) with any document. */
  const PARAPHRASE = 'protective headgear required for builders';

  beforeAll(async () => {
    for (const [name, text] of Object.entries(DOCS)) {
      ids[name] = await uploadFile(orgA.key, { bytes: Buffer.from(text), name, contentType: 'text/markdown' });
    }
    const res = await api(orgA.key)
      .post('/api/v2/documents/process')
      .send({ document_ids: Object.values(ids) });
    expect(res.status).toBe(200);
    for (const id of Object.values(ids)) expect((await waitForDocument(orgA.key, id)).status).toBe('completed');
  });
  afterAll(() => retrieval.close());

  it('finds a document by meaning: a paraphrase with no shared word ranks it first, hybrid, not degraded', async () => {
    const res = await retrieval.search(
      { query: PARAPHRASE, topK: 3, documentIds: [], excludeDocumentIds: [], corpus: retrievalV1.Corpus.CORPUS_ORG },
      { orgId: orgA.orgId },
    );
    expect(res.mode).toBe('hybrid');
    expect(res.degradedReason).toBe('');
    expect(res.hits[0].chunk!.documentId).toBe(ids['hard-hats.md']);
    // A lexical query keeps its exact match first.
    const exact = await retrieval.search(
      { query: 'invoices accounts department', topK: 3, documentIds: [], excludeDocumentIds: [], corpus: retrievalV1.Corpus.CORPUS_ORG },
      { orgId: orgA.orgId },
    );
    expect(exact.hits[0].chunk!.documentId).toBe(ids['invoices.md']);
  });

  it("never returns another organization's chunks, although dense search always has neighbours", async () => {
    const res = await retrieval.search(
      { query: PARAPHRASE, topK: 10, documentIds: [], excludeDocumentIds: [], corpus: retrievalV1.Corpus.CORPUS_ORG },
      { orgId: orgB.orgId },
    );
    expect(res.hits).toEqual([]);
  });
});
