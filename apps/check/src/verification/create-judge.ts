import { Logger } from '@kb/common';
import { chatModelFromConfig, LocalNliModel, type ChatModelConfig, type EmbeddingModel, type LocalNliModelOptions } from '@kb/models';
import { defaultNliModelDir, defaultRsmModelDir, VERDICT_MODEL } from '@kb/text';
import { EmbeddedJudge, RequirementJudge } from './judges';
import { ModelJudge } from './model-judge';

/**
 * The judge this process uses: the configured chat model when `LLM_BASE_URL` is set (`@kb/models`,
 * see model-judge.ts; its verdicts are checked by the embedded judge), else the embedded judge.
 *
 * @param config the `LLM_*` settings of the service's validated config (`chatModelEnv`).
 * @param embeddings the service's sentence-embedding model (`openEmbeddingModel`), or null: the embedded
 *   judge then aligns evidence by words only (its lexical variant, calibrated for that case).
 * @param nli the entailment cross-encoder ({@link openNliModel}), or null.
 * @param rsm the requirement-satisfaction model ({@link openRsmModel}), or null.
 * @throws Error naming the variable when `LLM_MODEL` is missing while `LLM_BASE_URL` is set (fail fast at boot).
 */
export function createJudge(
  config: ChatModelConfig,
  logger: Logger,
  embeddings: EmbeddingModel | null = null,
  nli: LocalNliModel | null = null,
  rsm: LocalNliModel | null = null,
): RequirementJudge {
  const embedded = new EmbeddedJudge(embeddings, undefined, logger, nli, rsm);
  const chat = chatModelFromConfig(config);
  if (!chat) {
    logger.info(
      { semantic: embedded.semantic, satisfaction: embedded.satisfaction, entailment: embedded.entailment },
      'no chat model configured (LLM_BASE_URL unset): using the embedded judge',
    );
    return embedded;
  }
  logger.info({ model: chat.model }, 'judging with the configured chat model');
  return new ModelJudge(chat, embedded);
}

/** What {@link openNliModel} found: the model, or null and why (logged once at boot). */
export interface OpenedNliModel {
  model: LocalNliModel | null;
  reason?: string;
  /**
   * Set when `model` is null: true when the judge would use the model and cannot (missing files, no
   * embedding model), a degraded service worth a warning; false when it is off by design
   * (`JUDGE_NLI_MODEL_DIR=none`, or the committed judge has no `nli` variant).
   */
  degraded?: boolean;
}

/**
 * Opens the embedded judge's entailment cross-encoder (`JUDGE_NLI_MODEL_DIR`; empty = the committed
 * `libs/text/models/judge-nli-minilm`, `none` = off). Missing files give `model: null` with a reason (the
 * judge then runs its embeddings-only variant), never a failed boot; so does an embedding model that is
 * off, since the cross-encoder's variant needs the embeddings' signals too, and so does a committed judge
 * without an `nli` variant (nothing would use the scores), unless `forTraining` (`train:judge` dumps them).
 * `passes`: onnxruntime intra-op threads per forward pass (`threads`, `JUDGE_MODEL_THREADS`) and worker threads running
 * the passes of concurrent calls side by side (`workers`, `JUDGE_MODEL_WORKERS`); both default 1 and neither changes a
 * score (docs/check.md "Performance").
 * @throws ModelProviderError when the files are there but cannot be loaded (a broken model fails fast).
 */
export async function openNliModel(
  setting: string,
  embeddings: EmbeddingModel | null,
  forTraining = false,
  passes: CrossEncoderPasses = {},
): Promise<OpenedNliModel> {
  return openCrossEncoder(CROSS_ENCODERS.nli, setting, embeddings, forTraining, passes);
}

/**
 * Opens the embedded judge's requirement-satisfaction model (`JUDGE_RSM_MODEL_DIR`; empty = the committed
 * `libs/text/models/judge-rsm-minilm`, `none` = off), as {@link openNliModel} opens the entailment model: missing
 * files, no embedding model, or a committed judge without an `rsm` variant (unless `forTraining`) give
 * `model: null` with the reason, never a failed boot; `passes` as there.
 * @throws ModelProviderError when the files are there but cannot be loaded (a broken model fails fast).
 */
export async function openRsmModel(
  setting: string,
  embeddings: EmbeddingModel | null,
  forTraining = false,
  passes: CrossEncoderPasses = {},
): Promise<OpenedNliModel> {
  return openCrossEncoder(CROSS_ENCODERS.rsm, setting, embeddings, forTraining, passes);
}

/** How a cross-encoder runs its forward passes: `LocalNliModelOptions` `threads` and `workers` (each default 1). */
export type CrossEncoderPasses = Pick<LocalNliModelOptions, 'threads' | 'workers'>;

/** The judge's two cross-encoders: its variant in judge-model.json, setting, default folder, and name in messages. */
const CROSS_ENCODERS = {
  nli: { variant: 'nli', env: 'JUDGE_NLI_MODEL_DIR', defaultDir: defaultNliModelDir, label: 'entailment' },
  rsm: { variant: 'rsm', env: 'JUDGE_RSM_MODEL_DIR', defaultDir: defaultRsmModelDir, label: 'requirement-satisfaction' },
} as const;

/** {@link openNliModel} and {@link openRsmModel}, for the cross-encoder `kind` describes. */
async function openCrossEncoder(
  kind: (typeof CROSS_ENCODERS)[keyof typeof CROSS_ENCODERS],
  setting: string,
  embeddings: EmbeddingModel | null,
  forTraining: boolean,
  passes: CrossEncoderPasses,
): Promise<OpenedNliModel> {
  if (setting.trim().toLowerCase() === 'none') return { model: null, reason: `${kind.env}=none`, degraded: false };
  if (!VERDICT_MODEL.variants[kind.variant] && !forTraining)
    return { model: null, reason: `the committed judge (libs/text/models/judge/judge-model.json) has no ${kind.variant} variant`, degraded: false };
  if (!embeddings) return { model: null, reason: `no embedding model: the ${kind.label} variant of the judge needs it`, degraded: true };
  const dir = setting.trim() || kind.defaultDir();
  if (!LocalNliModel.present(dir))
    return { model: null, reason: `no ${kind.label} model in ${dir} (tokenizer.json, config.json, onnx/model_quantized.onnx expected)`, degraded: true };
  return { model: await LocalNliModel.load({ dir, ...passes }) };
}
