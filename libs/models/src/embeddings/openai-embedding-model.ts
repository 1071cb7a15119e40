import OpenAI, { AzureOpenAI } from 'openai';
import { providerErrorOf } from '../openai-errors';
import { ModelProviderError } from '../errors';
import type { EmbeddingModel } from './types';

/** Settings of {@link OpenAiEmbeddingModel} (from the `EMBEDDINGS_*` variables, see `openEmbeddingModel`). */
export interface OpenAiEmbeddingModelOptions {
  /** Base URL of the OpenAI-compatible API, e.g. `http://localhost:8081/v1`. For Azure: the resource endpoint. */
  baseUrl: string;
  /** Bearer key; servers without auth accept any value. */
  apiKey?: string;
  /** Model name (Azure: the deployment name). */
  model: string;
  /**
   * Expected vector length. When the model supports shortening (OpenAI `text-embedding-3-*`),
   * it is also sent as the `dimensions` request field if `sendDimensions` is true.
   */
  dimensions: number;
  /** Send `dimensions` in each request (only for models that accept it). Default false. */
  sendDimensions?: boolean;
  /** Texts per request (providers cap it: OpenAI 2048, TEI 32 by default). */
  batchSize: number;
  /** Per-attempt timeout in ms. */
  timeoutMs: number;
  /** Retries after the first attempt on 408/409/429/5xx/network errors (exponential backoff with jitter, `Retry-After` honoured; the `openai` client). */
  maxRetries: number;
  /** Azure OpenAI `api-version`; when set the Azure client is used. */
  apiVersion?: string;
}

/**
 * Embedding model over the OpenAI embeddings API (`POST /embeddings`) through the official `openai`
 * client, which provides retries with backoff and timeouts. Texts are sent `batchSize` at a time,
 * one request after the other; every answer is checked (one vector per text, each of the declared
 * length), so vectors of an unexpected model can never enter the index.
 */
export class OpenAiEmbeddingModel implements EmbeddingModel {
  readonly model: string;
  readonly dimensions: number;
  private readonly client: OpenAI;

  constructor(private readonly options: OpenAiEmbeddingModelOptions) {
    if (!Number.isInteger(options.dimensions) || options.dimensions < 1) throw new Error('dimensions must be a positive integer');
    if (!Number.isInteger(options.batchSize) || options.batchSize < 1) throw new Error('batchSize must be a positive integer');
    this.model = options.model;
    this.dimensions = options.dimensions;
    const common = { apiKey: options.apiKey || 'unused', timeout: options.timeoutMs, maxRetries: options.maxRetries };
    this.client = options.apiVersion
      ? new AzureOpenAI({ ...common, endpoint: options.baseUrl, apiVersion: options.apiVersion, deployment: options.model })
      : new OpenAI({ ...common, baseURL: options.baseUrl });
  }

  /** @inheritdoc */
  async embed(texts: string[], signal?: AbortSignal): Promise<number[][]> {
    const out: number[][] = [];
    for (let i = 0; i < texts.length; i += this.options.batchSize) {
      const batch = texts.slice(i, i + this.options.batchSize).map((t) => (t.trim() === '' ? ' ' : t));
      let response;
      try {
        response = await this.client.embeddings.create(
          {
            model: this.model,
            input: batch,
            encoding_format: 'float',
            ...(this.options.sendDimensions ? { dimensions: this.dimensions } : {}),
          },
          { signal },
        );
      } catch (error) {
        throw providerErrorOf(error, 'embeddings provider');
      }
      const data = [...(response.data ?? [])].sort((a, b) => a.index - b.index);
      if (data.length !== batch.length) {
        throw invalid(`the embeddings provider returned ${data.length} vectors for ${batch.length} texts`);
      }
      for (const item of data) {
        const v = item.embedding as unknown;
        if (!Array.isArray(v) || v.length !== this.dimensions || !v.every((x) => typeof x === 'number' && Number.isFinite(x))) {
          throw invalid(
            `the embeddings provider returned a vector of length ${Array.isArray(v) ? v.length : 'n/a'} for model "${this.model}", ` +
              `expected ${this.dimensions} (EMBEDDINGS_DIMENSIONS)`,
          );
        }
        out.push(v as number[]);
      }
    }
    return out;
  }
}

/**
 * Start-up check of an embedding model: embeds one probe text, so a wrong URL, key, model name or
 * `EMBEDDINGS_DIMENSIONS` fails the service at boot with a message naming the cause, instead of
 * failing every document later.
 * @throws ModelProviderError as {@link EmbeddingModel.embed}.
 */
export async function verifyEmbeddingModel(model: EmbeddingModel, signal?: AbortSignal): Promise<void> {
  await model.embed(['dimension check'], signal);
}

function invalid(message: string): ModelProviderError {
  return new ModelProviderError(message, false, null, 'invalid_output');
}
