import { BATCH_QUESTION_STATUSES, BATCH_STATUSES } from '@kb/events';
import { ApiProperty } from '@nestjs/swagger';
import { type ViewClass, WithQuotePlace } from '../common/api-models';

/**
 * Response models of the agent routes, for the OpenAPI reference only (handlers return plain
 * objects of these shapes, built by presenters.ts; decisions.md "POST /api/v2/agent/query",
 * "Batches" and "Answerability").
 */
class CitationFields {
  @ApiProperty({ type: 'integer', minimum: 1, example: 1, description: '1-based; matches the [n] marker in the answer' }) index: number;
  @ApiProperty({ format: 'uuid' }) document_id: string;
  @ApiProperty({ example: 'site-safety-plan.pdf' }) file_name: string;
  @ApiProperty({ example: '9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d:12' }) chunk_id: string;
  @ApiProperty({ type: 'integer', nullable: true, example: 4 }) start_page: number | null;
  @ApiProperty({ type: 'integer', nullable: true, example: 4 }) end_page: number | null;
  @ApiProperty({ example: 'Hard hats are required at all times on site.', description: 'verbatim from the chunk; a whole sentence in extractive answers' })
  quote: string;
  @ApiProperty({ example: 0.91, description: 'how well the quote matches the question (0–1)' }) score: number;
}

export class CitationView extends WithQuotePlace(CitationFields, 'heading path of the cited chunk (outermost first), null when it is under no heading') {}

export class UsageView {
  @ApiProperty({ type: 'integer', minimum: 0, example: 812 }) prompt_tokens: number;
  @ApiProperty({ type: 'integer', minimum: 0, example: 41 }) completion_tokens: number;
  @ApiProperty({ type: 'integer', minimum: 0, example: 853 }) total_tokens: number;
}

const CONFIDENCE = {
  minimum: 0,
  maximum: 1,
  example: 0.93,
  description:
    'Calibrated probability that the cited sources answer the question. Below 0.7 the sources may not answer it; when the service decides they do not, the answer says nothing was found and `citations` is [].',
};

/**
 * Mixin: `Base`'s properties, then the fields an answer shares with a chat reply (`citations`,
 * `agent`, `model`, `usage`, `confidence`; presenters.ts `presentAnswerFields`), in that order.
 * @param agentExample the example value of `agent`
 */
function WithAnswerFields<T extends ViewClass>(Base: T, agentExample: string) {
  class Answered extends Base {
    @ApiProperty({ type: [CitationView] }) citations: CitationView[];
    @ApiProperty({ enum: ['general', 'project', 'safety'], example: agentExample }) agent: string;
    @ApiProperty({ example: 'embedded-extractive' }) model: string;
    @ApiProperty({ type: UsageView }) usage: UsageView;
    @ApiProperty(CONFIDENCE) confidence: number;
  }
  return Answered;
}

class AnswerText {
  @ApiProperty({ example: 'Based on the documents (verbatim excerpts): "Hard hats are required at all times on site." [1]' }) answer: string;
}

export class AnswerView extends WithAnswerFields(AnswerText, 'project') {}

export class ChatMessageView {
  @ApiProperty({ enum: ['assistant'] }) role: string;
  @ApiProperty({ example: 'Based on the documents (verbatim excerpts): "Hard hats are required at all times on site." [1]' }) content: string;
}

class ChatReplyMessage {
  @ApiProperty({ type: ChatMessageView }) message: ChatMessageView;
}

export class ChatReplyView extends WithAnswerFields(ChatReplyMessage, 'safety') {}

/** `data` of the chat stream's `meta` event (first event). */
export class ChatMetaEventData {
  @ApiProperty({ enum: ['general', 'project', 'safety'], example: 'project' }) agent: string;
  @ApiProperty({ example: 'embedded-extractive' }) model: string;
  @ApiProperty({ example: '6c1d1a8e-4a0e-4a8f-9d1e-3f6c2b7a9e10' }) request_id: string;
}

/** `data` of a `delta` event: the next piece of the answer text. */
export class ChatDeltaEventData {
  @ApiProperty({ example: 'Based on the documents: ' }) content: string;
}

/** `data` of the `citations` event (after the last delta). */
export class ChatCitationsEventData {
  @ApiProperty({ type: [CitationView] }) citations: CitationView[];
  @ApiProperty(CONFIDENCE) confidence: number;
}

/** `data` of the `done` event (last event of a successful stream). */
export class ChatDoneEventData {
  @ApiProperty({ type: UsageView }) usage: UsageView;
  @ApiProperty({ example: 'stop' }) finish_reason: string;
}

/** `data` of the `error` event: a failure after the stream began (the stream then ends). */
export class ChatErrorEventData {
  @ApiProperty({ example: 'INTERNAL_ERROR' }) code: string;
  @ApiProperty({ example: 'An internal error occurred. Retry later; if it persists, contact support with the request id.' }) message: string;
}

export class BatchResultView {
  @ApiProperty({ type: 'integer', minimum: 0, example: 0, description: '0-based position of the question' }) index: number;
  @ApiProperty({ example: 'Are hard hats required on site?' }) question: string;
  @ApiProperty({ enum: [...BATCH_QUESTION_STATUSES] }) status: string;
  @ApiProperty({ type: String, nullable: true }) answer: string | null;
  @ApiProperty({ type: [CitationView] }) citations: CitationView[];
  @ApiProperty({ ...CONFIDENCE, type: Number, nullable: true, description: `${CONFIDENCE.description} null while pending and for a failed question.` })
  confidence: number | null;
  @ApiProperty({ type: String, nullable: true, example: null }) error: string | null;
}

export class BatchView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ type: String, nullable: true }) name: string | null;
  @ApiProperty() org_id: string;
  @ApiProperty({ type: String, format: 'uuid', nullable: true }) project_id: string | null;
  @ApiProperty({ type: String, nullable: true, enum: ['general', 'project', 'safety'] }) chat_type: string | null;
  @ApiProperty({ enum: [...BATCH_STATUSES] }) status: string;
  @ApiProperty({ type: 'integer', minimum: 0, example: 10 }) total_questions: number;
  @ApiProperty({ type: 'integer', minimum: 0, example: 4 }) processed_questions: number;
  @ApiProperty({ type: 'integer', minimum: 0, example: 0 }) failed_questions: number;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

export class BatchDetailView extends BatchView {
  @ApiProperty({ type: [BatchResultView] }) results: BatchResultView[];
}
