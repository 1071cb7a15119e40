import { AppError, CallContext, ErrorCode, Logger } from '@kb/common';
import {
  Citation,
  composeWithLiveSources,
  DocumentsClient,
  KnowledgeScope,
  Passage,
  requireProject,
  RetrievalClient,
  quotePlacement,
  searchKnowledge,
} from '@kb/knowledge';
import { addUsage, completeStep, NO_USAGE, type ChatMessage, type ChatModel, type EmbeddingModel, type StructuredStep, type TokenUsage } from '@kb/models';
import { assessAnswerability, bestQuote, composeAnswer, NO_RELEVANT_INFORMATION, type EmbedTexts, type Quote } from '@kb/text';
import { z, type ZodType } from 'zod';
import { claimFor, MarkerFilter } from './markers';
import { rewriteQuery, type ConversationMessage } from './rewrite';
import { AgentName, chooseAgent, classifySafety } from './router';

/** Name reported as `model` when no chat model is configured: answers are extracted, not generated. */
export const EXTRACTIVE_MODEL_NAME = 'embedded-extractive';

/** What used the tokens (TokensRecordedEvent.source). */
export type UsageSource = 'agent.query' | 'agent.chat' | 'agent.batch';

/** Publishes one usage record per model call (see `usage.tokens.recorded`). */
export type UsageRecorder = (orgId: string, source: UsageSource, model: string, usage: TokenUsage) => Promise<void>;

/** One answering request: a single question is a conversation of one user message. */
export interface AnswerRequest {
  messages: ConversationMessage[];
  chatType?: string;
  projectId?: string;
  documentIds: string[];
  /** Passages retrieved (1–20). */
  topK: number;
  safetyAssistantEnabled: boolean;
  source: UsageSource;
  /** Aborts the work (client disconnected): retrieval results are dropped, the model call is cancelled. */
  signal?: AbortSignal;
}

/** Callbacks of a streamed answer. `onMeta` runs once before any delta; each callback is awaited (backpressure). */
export interface AnswerHooks {
  onMeta?: (agent: AgentName, model: string) => Promise<void>;
  onDelta?: (content: string) => Promise<void>;
}

export interface AnswerResult {
  answer: string;
  citations: Citation[];
  agent: AgentName;
  model: string;
  usage: TokenUsage;
  finishReason: string;
  /**
   * Calibrated probability (0–1) that the answer's sources answer the question (decisions.md
   * "Answerability"; below 0.7 they may not). From the answerability model over the retrieved
   * passages (`assessAnswerability`), for the extractive and the model path alike.
   */
  confidence: number;
}

/** Sentence vectors kept per agent process (sentences of often retrieved chunks are embedded once). */
const SENTENCE_CACHE_SIZE = 20_000;

/**
 * An {@link EmbedTexts} over `model` with a least-recently-used cache by text, at `query` priority
 * (an answer is waited for). Vectors are L2-normalised by the embedding port.
 */
export function cachedEmbedder(model: EmbeddingModel, size = SENTENCE_CACHE_SIZE): EmbedTexts {
  const cache = new Map<string, number[]>();
  return async (texts) => {
    const missing = [...new Set(texts.filter((t) => !cache.has(t)))];
    if (missing.length > 0) {
      const vectors = await model.embed(missing, undefined, 'query');
      missing.forEach((t, i) => cache.set(t, vectors[i]));
    }
    return texts.map((t) => {
      const v = cache.get(t)!;
      cache.delete(t); // re-insert: Map order is the recency order
      cache.set(t, v);
      while (cache.size > size) cache.delete(cache.keys().next().value as string);
      return v;
    });
  };
}

/** Extractive answers are streamed in pieces of this many words (real pieces of the final answer). */
const DELTA_WORDS = 6;

const ANSWER_SYSTEM_PROMPT = [
  'You answer questions using only the numbered passages given below.',
  'Cite every statement with the number of the passage that supports it in square brackets, e.g. [1] or [2][3].',
  'Use only passage numbers that exist. Do not invent facts that are not in the passages.',
  'If the passages do not contain the answer, say plainly that the documents do not contain this information and cite nothing.',
  'Answer concisely, in the language of the question.',
].join(' ');

const REWRITE_SCHEMA = z.object({ query: z.string().min(1) });
const ROUTE_SCHEMA = z.object({ safety: z.boolean() });

/**
 * Grounded answering for query, chat and batches: routes to an agent, rewrites follow-ups into a
 * stand-alone retrieval query, retrieves passages from the agent's scope and answers with
 * citations whose `quote` is verbatim from its chunk and whose `index` matches the [n] markers.
 *
 * Without a chat model (the embedded default) the router is the lexicon classifier
 * ({@link classifySafety}), the rewrite is {@link rewriteQuery} and the answer is extractive
 * (`composeAnswer`: whole sentences chosen by the answerability model, with the embedding model
 * when one is configured, or "not found" and no citations). With a model, the model does all
 * three; its markers are checked against the passages it was given ({@link MarkerFilter}) and each
 * citation's quote is the passage sentence that best supports the sentence citing it. Either way
 * `confidence` comes from the answerability model over the retrieved passages.
 */
export class AnswerService {
  constructor(
    private readonly deps: {
      retrieval: RetrievalClient;
      documents: DocumentsClient;
      model: ChatModel | null;
      /** Chooses answer sentences by meaning; null → the lexical variant of the answerability model. */
      embeddings?: EmbeddingModel | null;
      recordUsage: UsageRecorder;
      logger: Logger;
    },
  ) {
    this.embed = deps.embeddings ? cachedEmbedder(deps.embeddings) : undefined;
  }

  private readonly embed: EmbedTexts | undefined;

  /** @throws AppError NOT_FOUND when the project is not one of the caller's org. */
  async requireProject(ctx: CallContext, projectId: string): Promise<void> {
    await requireProject(ctx, this.deps.documents, projectId);
  }

  /** Model name reported to clients. */
  get modelName(): string {
    return this.deps.model?.model ?? EXTRACTIVE_MODEL_NAME;
  }

  /**
   * Answers the last user message of `req.messages`.
   * @throws AppError before `onMeta` (AGENT_NOT_ENABLED, VALIDATION_ERROR, NOT_FOUND of the project,
   *   SERVICE_UNAVAILABLE …); after it, only errors of the model provider or an abort.
   */
  async answer(ctx: CallContext, req: AnswerRequest, hooks: AnswerHooks = {}): Promise<AnswerResult> {
    const last = req.messages[req.messages.length - 1];
    if (!last || last.role !== 'user' || !last.content.trim()) throw AppError.validation('The last message must be a non-empty user message.');
    let usage = NO_USAGE;
    const spend = async (u: TokenUsage) => {
      usage = addUsage(usage, u);
      await this.deps.recordUsage(ctx.orgId, req.source, this.modelName, u).catch((err) => this.deps.logger.warn({ err }, 'usage record failed'));
    };

    let agent = await chooseAgent(req, () => this.isSafetyConversation(req, spend));
    // Routed to safety by the classifier (chat_type omitted): the organization's own documents are
    // searched too, and answer when they answer at least as well as the shared corpus
    // (ownDocumentsAnswerBetter). Their scope is the one the request would have had without the
    // Safety Assistant, so a project must be the caller's.
    const byEvidence = agent === 'safety' && !req.chatType;
    const orgAgent: AgentName = req.projectId ? 'project' : 'general';
    if (req.projectId && (agent !== 'safety' || byEvidence)) await requireProject(ctx, this.deps.documents, req.projectId);
    const query = await this.retrievalQuery(req, spend);
    throwIfAborted(req.signal);
    const topK = Math.min(Math.max(req.topK || 8, 1), 20);
    const orgScope = (a: AgentName): KnowledgeScope => ({
      corpus: 'org',
      projectId: a === 'project' ? req.projectId : undefined,
      documentIds: req.documentIds,
    });
    let passages: Passage[];
    if (byEvidence) {
      const [own, shared] = await Promise.all([
        searchKnowledge(ctx, this.deps, query, orgScope(orgAgent), topK),
        searchKnowledge(ctx, this.deps, query, { corpus: 'safety' }, topK),
      ]);
      throwIfAborted(req.signal);
      if (await this.ownDocumentsAnswerBetter(query, own, shared)) {
        agent = orgAgent;
        passages = own;
      } else {
        passages = shared;
      }
    } else {
      passages = await searchKnowledge(ctx, this.deps, query, agent === 'safety' ? { corpus: 'safety' } : orgScope(agent), topK);
    }
    throwIfAborted(req.signal);
    await hooks.onMeta?.(agent, this.modelName);

    if (!this.deps.model) {
      // Answerability is judged on the stand-alone question used for retrieval: for a follow-up
      // ("and how often must it be inspected?") that is the rewrite carrying the conversation's topic,
      // whose own words alone would look unanswered.
      const compose = (p: Passage[]) => composeAnswer(query, p, { embed: this.embed });
      const result =
        agent === 'safety'
          ? await compose(passages)
          : await composeWithLiveSources(ctx, this.deps.documents, passages, compose, (r) => r.citations.map((c) => c.quote.passage.documentId));
      await spend(result.usage);
      if (hooks.onDelta) {
        const words = result.answer.match(/\S+\s*/g) ?? [result.answer];
        for (let i = 0; i < words.length; i += DELTA_WORDS) {
          throwIfAborted(req.signal);
          await hooks.onDelta(words.slice(i, i + DELTA_WORDS).join(''));
        }
      }
      return {
        answer: result.answer,
        citations: result.citations.map((c) => toCitation(c.index, c.quote, c.score)),
        agent,
        model: EXTRACTIVE_MODEL_NAME,
        usage,
        finishReason: 'stop',
        confidence: result.confidence,
      };
    }
    return this.generate(ctx, req, agent, query, passages, spend, hooks, () => usage);
  }

  /** Model path: stream the answer from numbered passages, checking and renumbering markers on the fly. */
  private async generate(
    ctx: CallContext,
    req: AnswerRequest,
    agent: AgentName,
    query: string,
    passages: Passage[],
    spend: (u: TokenUsage) => Promise<void>,
    hooks: AnswerHooks,
    usage: () => TokenUsage,
  ): Promise<AnswerResult> {
    const model = this.deps.model!;
    if (passages.length === 0) {
      await hooks.onDelta?.(NO_RELEVANT_INFORMATION);
      return { answer: NO_RELEVANT_INFORMATION, citations: [], agent, model: model.model, usage: usage(), finishReason: 'stop', confidence: 0 };
    }
    // Whether the passages answer the question at all: the same calibrated model as the extractive path.
    const { confidence } = await assessAnswerability(query, passages, { embed: this.embed });
    const numbered = passages
      .map(
        (p, i) =>
          `[${i + 1}] ${p.fileName}${p.startPage ? ` (p. ${p.startPage}${p.endPage && p.endPage !== p.startPage ? `-${p.endPage}` : ''})` : ''}\n${p.text}`,
      )
      .join('\n\n');
    const system =
      (agent === 'safety' ? 'You are a construction-site safety assistant. ' : 'You are a knowledge-base assistant. ') +
      `${ANSWER_SYSTEM_PROMPT}\n\nPassages:\n\n${numbered}`;
    const messages: ChatMessage[] = [{ role: 'system', content: system }, ...req.messages.map((m) => ({ role: m.role, content: m.content }))];
    const filter = new MarkerFilter(passages.length);
    let answer = '';
    let finishReason = 'stop';
    const emit = async (text: string) => {
      if (!text) return;
      answer += text;
      await hooks.onDelta?.(text);
    };
    for await (const event of model.stream({ messages, signal: req.signal })) {
      if (event.type === 'delta') await emit(filter.push(event.content));
      else {
        finishReason = event.finishReason;
        await spend(event.usage);
      }
    }
    await emit(filter.flush());
    answer = answer.trim();
    let citations: Citation[] = [];
    filter.used.forEach((passageNumber, i) => {
      const q = bestQuote(passages[passageNumber - 1], claimFor(answer, i + 1));
      if (q) citations.push(toCitation(i + 1, q.quote, q.score));
    });
    if (agent !== 'safety' && citations.length > 0) {
      // A document deleted while the model was writing is never cited (decisions.md "Documents").
      const cited = [...new Set(citations.map((c) => c.documentId))];
      const live = new Set((await this.deps.documents.filterLiveDocuments({ documentIds: cited }, ctx)).documentIds);
      if (cited.some((id) => !live.has(id))) {
        const kept = citations.filter((c) => live.has(c.documentId));
        const renumber = new Map(kept.map((c, i) => [c.index, i + 1]));
        if (!hooks.onDelta) {
          // Not streamed yet: drop the dead markers from the text and renumber the rest.
          answer = answer
            .replace(/\[(\d+)\]/g, (_, n: string) => (renumber.has(Number(n)) ? `[${renumber.get(Number(n))}]` : ''))
            .replace(/\s+([.,;:])/g, '$1');
          citations = kept.map((c) => ({ ...c, index: renumber.get(c.index)! }));
        } else {
          // Already streamed: the text keeps its markers; the deleted document's citations are withheld.
          citations = kept;
        }
      }
    }
    return {
      answer,
      citations,
      agent,
      model: model.model,
      usage: usage(),
      finishReason,
      confidence: citations.length > 0 ? round3(confidence) : Math.min(round3(confidence), 0.69),
    };
  }

  /**
   * Routing by evidence (docs/agent.md "Routing"): do the organization's own passages answer `query`
   * at least as well as the shared safety corpus? True when the answerability model (the one that
   * decides "not found") finds their best sentence at or above its abstention cut-off AND their
   * confidence is at least the corpus's (the corpus counts 0 when it does not answer). Passages of
   * documents deleted meanwhile were already dropped by `searchKnowledge`.
   */
  private async ownDocumentsAnswerBetter(query: string, own: Passage[], shared: Passage[]): Promise<boolean> {
    if (own.length === 0) return false;
    const [mine, corpus] = await Promise.all([
      assessAnswerability(query, own, { embed: this.embed }),
      shared.length > 0 ? assessAnswerability(query, shared, { embed: this.embed }) : null,
    ]);
    if (!mine.answerable) return false;
    return mine.confidence >= (corpus?.answerable ? corpus.confidence : 0);
  }

  /** Is the conversation about construction/workplace safety? Model when configured, else the lexicon. */
  private async isSafetyConversation(req: AnswerRequest, spend: (u: TokenUsage) => Promise<void>): Promise<boolean> {
    const userText = req.messages
      .filter((m) => m.role === 'user')
      .slice(-3)
      .map((m) => m.content)
      .join('\n');
    if (!this.deps.model) return classifySafety(userText).isSafety;
    const answer = await this.structured(
      spend,
      req.signal,
      {
        name: 'route',
        system:
          'Classify the conversation. Answer with JSON {"safety": true} when the user asks about construction-site or workplace safety (hazards, fall protection, scaffolds, ladders, excavations, PPE, electrical or fire safety, safety rules and regulations), else {"safety": false}.',
        user: userText,
        jsonSchema: { type: 'object', properties: { safety: { type: 'boolean' } }, required: ['safety'], additionalProperties: false },
        maxTokens: 20,
      },
      ROUTE_SCHEMA,
    );
    return answer ? answer.safety : classifySafety(userText).isSafety;
  }

  /** The retrieval query: the question itself, or for a follow-up, a stand-alone rewrite from the conversation. */
  private async retrievalQuery(req: AnswerRequest, spend: (u: TokenUsage) => Promise<void>): Promise<string> {
    const last = req.messages[req.messages.length - 1].content.trim();
    if (req.messages.length === 1) return last;
    if (!this.deps.model) return rewriteQuery(req.messages);
    const history = req.messages.map((m) => `${m.role}: ${m.content}`).join('\n');
    const answer = await this.structured(
      spend,
      req.signal,
      {
        name: 'rewrite',
        system:
          'Rewrite the last user message of the conversation into one stand-alone search query that can be understood without the conversation (resolve pronouns and references). Answer with JSON {"query": "..."}.',
        user: history,
        jsonSchema: { type: 'object', properties: { query: { type: 'string', minLength: 1 } }, required: ['query'], additionalProperties: false },
        maxTokens: 200,
      },
      REWRITE_SCHEMA,
    );
    return answer ? answer.query.trim() || last : rewriteQuery(req.messages);
  }

  /**
   * A structured model call (a system prompt and one user message; the answer is JSON matching
   * `step.jsonSchema`, parsed with `schema`) whose usage is recorded; null when its answer stayed
   * invalid after the repair (`invalid_output`, e.g. a small model looping until the token limit), so
   * that the caller uses its embedded rule for that step instead of failing the whole answer. Other
   * errors propagate. Call only when `this.deps.model` is set.
   */
  private async structured<T>(
    spend: (u: TokenUsage) => Promise<void>,
    signal: AbortSignal | undefined,
    step: StructuredStep & { maxTokens: number },
    schema: ZodType<T>,
  ): Promise<T | null> {
    const answer = await completeStep(this.deps.model!, step, schema, signal);
    if ('unusable' in answer) {
      if (answer.unusable.usage) await spend(answer.unusable.usage);
      this.deps.logger.warn({ err: answer.unusable.message }, 'unusable structured answer from the model; using the embedded rule for this step');
      return null;
    }
    await spend(answer.result.usage);
    return answer.value;
  }
}

function toCitation(index: number, quote: Quote, score: number): Citation {
  return {
    index,
    documentId: quote.passage.documentId,
    fileName: quote.passage.fileName,
    chunkId: quote.passage.chunkId,
    startPage: quote.startPage,
    endPage: quote.endPage,
    quote: quote.quote,
    score,
    section: quote.passage.section ?? null,
    ...quotePlacement(quote.passage.text, quote.passage.wordBoxes, quote.quote, { start: quote.start, end: quote.end }),
  };
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** Throws CANCELLED-like AppError when the caller went away. */
export function throwIfAborted(signal?: AbortSignal): void {
  if (signal?.aborted) throw new AppError(ErrorCode.TIMEOUT, 'The request was cancelled.');
}
