/**
 * Who waits for an embedding: `query` (a search or a judge waiting on it: served first) or `bulk`
 * (indexing, enrichment: served in between). Adapters without a local queue ignore it.
 */
export type EmbedPriority = 'query' | 'bulk';

/**
 * Embeddings port: turns texts into dense vectors for semantic search.
 *
 * Implementations: {@link LocalEmbeddingModel} (an ONNX sentence-embedding model run in process,
 * the default) and {@link OpenAiEmbeddingModel} (any OpenAI-compatible `/v1/embeddings` endpoint:
 * OpenAI, Azure OpenAI, Ollama, vLLM, Hugging Face TEI, llama.cpp server, LM Studio). With
 * `EMBEDDINGS_PROVIDER=none`, or when the local model's files are missing, `openEmbeddingModel`
 * returns no model and says why; retrieval is then lexical only.
 */
export interface EmbeddingModel {
  /** Model name as sent to the provider; stored with the index to detect a model change. */
  readonly model: string;
  /** Length of every vector `embed` returns (checked at start-up by `verify`). */
  readonly dimensions: number;
  /**
   * One vector per text, in input order, each of length {@link dimensions}. Texts are sent in
   * batches; an empty list gives `[]` without a call.
   * @throws ModelProviderError when the provider fails for good (after retries) or answers with
   *   vectors of another length or count (`invalid_output`). An abort of `signal` is rethrown as is.
   */
  embed(texts: string[], signal?: AbortSignal, priority?: EmbedPriority): Promise<number[][]>;
}
