import { AppError, CallContext, ErrorCode } from '@kb/common';
import { composeWithLiveSources, DocumentsClient, KnowledgeScope, requireProject, RetrievalClient, searchKnowledge } from '@kb/knowledge';
import { agentV1 } from '@kb/proto';
import { composeExtractiveAnswer } from '@kb/text';

/** Name reported as `model` when no chat model is configured: answers are extracted, not generated. */
export const EXTRACTIVE_MODEL_NAME = 'embedded-extractive';

export type AgentName = 'general' | 'project' | 'safety';

/**
 * Chooses the agent (decisions.md "Agent"): an explicit chat_type wins (safety needs the Safety
 * Assistant enabled, else AGENT_NOT_ENABLED); otherwise `project` when a project is given, else
 * `general`.
 */
export function chooseAgent(req: { chatType?: string; projectId?: string; safetyAssistantEnabled: boolean }): AgentName {
  if (req.chatType === 'safety') {
    if (!req.safetyAssistantEnabled) {
      throw new AppError(ErrorCode.AGENT_NOT_ENABLED, 'The Safety Assistant is not enabled for your organization. Ask your administrator to enable it.');
    }
    return 'safety';
  }
  if (req.chatType === 'project') {
    if (!req.projectId) throw AppError.validation('project_id is required when chat_type is project.');
    return 'project';
  }
  if (req.chatType === 'general') return 'general';
  return req.projectId ? 'project' : 'general';
}

/**
 * Single-question answering with citations (decisions.md "POST /api/v2/agent/query"), on the
 * embedded extractive answerer: the answer is composed of verbatim sentences from the retrieved
 * passages, each cited with a [n] marker; nothing relevant → a plain statement and no citations.
 */
export class QueryService {
  constructor(private readonly clients: { retrieval: RetrievalClient; documents: DocumentsClient }) {}

  async query(_ctx: CallContext, req: agentV1.QueryRequest): Promise<agentV1.Answer> {
    const agent = chooseAgent(req);
    if (req.projectId && agent !== 'safety') await requireProject(this.clients.documents, req.projectId);
    const scope: KnowledgeScope =
      agent === 'safety'
        ? { corpus: 'safety' }
        : { corpus: 'org', projectId: agent === 'project' ? req.projectId : undefined, documentIds: req.documentIds };
    const passages = await searchKnowledge(this.clients, req.question, scope, Math.min(Math.max(req.topK || 8, 1), 20));
    const result =
      agent === 'safety'
        ? composeExtractiveAnswer(req.question, passages)
        : await composeWithLiveSources(
            this.clients.documents,
            passages,
            (p) => composeExtractiveAnswer(req.question, p),
            (r) => r.citations.map((c) => c.quote.passage.documentId),
          );
    return {
      answer: result.answer,
      citations: result.citations.map((c) => ({
        index: c.index,
        documentId: c.quote.passage.documentId,
        fileName: c.quote.passage.fileName,
        chunkId: c.quote.passage.chunkId,
        startPage: c.quote.startPage ?? undefined,
        endPage: c.quote.endPage ?? undefined,
        quote: c.quote.quote,
        score: c.score,
      })),
      agent,
      model: EXTRACTIVE_MODEL_NAME,
      usage: result.usage,
    };
  }
}
