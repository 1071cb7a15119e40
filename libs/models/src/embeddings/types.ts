/**
 * Embeddings port: turns texts into dense vectors for semantic search.
 *
 * Implementations: {@link OpenAiEmbeddingModel} (any OpenAI-compatible `/v1/embeddings` endpoint:
 * OpenAI, Azure OpenAI, Ollama, vLLM, Hugging Face TEI, llama.cpp server, LM Studio). With no
 * embedding model configured (`EMBEDDINGS_BASE_URL` unset, the default) `embeddingModelFromEnv`
 * returns `null` and retrieval is lexical only.
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
  embed(texts: string[], signal?: AbortSignal): Promise<number[][]>;
}
