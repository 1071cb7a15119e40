import trained from '../models/judge/judge-model.json';

/** The three verdicts, in the order of the trained model's outputs. */
export const VERDICT_CLASSES = ['COMPLIANT', 'CONTRADICTS', 'NOT_FOUND'] as const;
export type VerdictClass = (typeof VERDICT_CLASSES)[number];

/** Piecewise-linear function through knots (x ascending), constant beyond the ends (numpy `interp`). */
export interface Knots {
  x: number[];
  y: number[];
}

/** One regression tree of scikit-learn's `HistGradientBoostingClassifier` (its `TreePredictor.nodes`). */
export interface Tree {
  feature: number[];
  threshold: number[];
  left: number[];
  right: number[];
  leaf: number[];
  value: number[];
}

/** The base estimator: gradient-boosted trees, or a standardised multinomial logistic regression. */
export type VerdictEstimator =
  { kind: 'gbdt'; baseline: number[]; trees: Tree[][] } | { kind: 'logistic'; mean: number[]; scale: number[]; coef: number[][]; intercept: number[] };

/**
 * One trained variant (with or without sentence embeddings and entailment scores), as written by `libs/text/models/judge/train/train_judge.py`:
 * the base estimator (`HistGradientBoostingClassifier` or `LogisticRegression`, whichever had the lower
 * cross-validated log-loss), one calibrator per class on its decision value (`CalibratedClassifierCV`:
 * isotonic regression as knots, or Platt's sigmoid 1 / (1 + exp(a·d + b))), and the confidence map from the
 * verdict's probability to the reported confidence.
 */
export interface VerdictModelVariant {
  features: string[];
  estimator: VerdictEstimator;
  calibration: { method: 'isotonic'; knots: Knots[] } | { method: 'sigmoid'; a: number[]; b: number[] };
  /** The verdict is argmax_k p_k × w_k (w tuned on out-of-fold training predictions for macro-F1). */
  decision_weights: number[];
  /** Per verdict: its probability → the reported confidence. */
  confidence: Knots[];
  /**
   * Per verdict, the corroboration its confidence needs to reach 0.7, or null: the signal `feature` must be above
   * `above` (the `rsm` variant's COMPLIANT: the section heading of the evidence names some of the requirement's
   * terms; train_judge.py CORROBORATION_PARAMS). Absent: no verdict needs one.
   */
  confident_requires?: ({ feature: string; above: number } | null)[];
}

/** Value of one tree for `x`: from the root, left when x[feature] <= threshold (signals are never NaN). */
function treeValue(t: Tree, x: number[]): number {
  let n = 0;
  while (!t.leaf[n]) n = x[t.feature[n]] <= t.threshold[n] ? t.left[n] : t.right[n];
  return t.value[n];
}

/** Per-class decision values: scikit-learn's `decision_function` of the base estimator. */
export function decisionValues(e: VerdictEstimator, x: number[]): number[] {
  if (e.kind === 'gbdt') {
    const raw = [...e.baseline];
    for (const iteration of e.trees) iteration.forEach((t, k) => (raw[k] += treeValue(t, x)));
    return raw;
  }
  const z = x.map((v, i) => (v - e.mean[i]) / (e.scale[i] || 1));
  return e.coef.map((row, k) => row.reduce((s, w, i) => s + w * z[i], e.intercept[k]));
}

export interface VerdictModel {
  classes: string[];
  /**
   * `rsm`: signals of the embeddings against the requirement's core statement and of the requirement-satisfaction
   * model (`RSM_SIGNAL_NAMES` appended); `nli`: signals of the embeddings and of the entailment cross-encoder
   * (`NLI_SIGNAL_NAMES` appended); `semantic`: with embeddings, without a cross-encoder; `lexical`: neither.
   * Each is calibrated for its case.
   */
  variants: { rsm?: VerdictModelVariant; nli?: VerdictModelVariant; semantic: VerdictModelVariant; lexical: VerdictModelVariant };
}

/** numpy.interp: linear between knots, clamped to the first/last y outside. */
export function interp(x: number, k: Knots): number {
  const n = k.x.length;
  if (n === 0) return x;
  if (x <= k.x[0]) return k.y[0];
  if (x >= k.x[n - 1]) return k.y[n - 1];
  let lo = 0;
  let hi = n - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (k.x[mid] <= x) lo = mid;
    else hi = mid;
  }
  const span = k.x[hi] - k.x[lo];
  return span > 0 ? k.y[lo] + ((x - k.x[lo]) * (k.y[hi] - k.y[lo])) / span : k.y[hi];
}

/**
 * Calibrated class probabilities for one signal vector, exactly as scikit-learn's
 * `CalibratedClassifierCV(estimator).predict_proba` computes them: the estimator's decision values (sum
 * of the trees plus the baseline, or coef · ((x − mean) / scale) + intercept), each calibrated by its
 * class's calibrator, then divided by their sum (uniform 1/3 when the sum is 0).
 *
 * @param x signal vector in `variant.features` order.
 * @returns probabilities in {@link VERDICT_CLASSES} order, summing to 1.
 */
export function predictProba(variant: VerdictModelVariant, x: number[]): number[] {
  const d = decisionValues(variant.estimator, x);
  const cal = variant.calibration;
  const p = d.map((dk, k) => (cal.method === 'isotonic' ? interp(dk, cal.knots[k]) : 1 / (1 + Math.exp(cal.a[k] * dk + cal.b[k]))));
  const sum = p.reduce((s, v) => s + v, 0);
  const out = sum > 0 ? p.map((v) => v / sum) : p.map(() => 1 / p.length);
  return out.map((v) => (v > 1 && v <= 1 + 1e-5 ? 1 : v));
}

/** Highest confidence of a verdict whose corroboration (`confident_requires`) is missing: just below 0.7. */
export const UNCORROBORATED_CONFIDENCE_CAP = 0.69;

/**
 * The reported confidence of verdict `index` with probability `pk`: its trained monotone map, capped at
 * {@link UNCORROBORATED_CONFIDENCE_CAP} when the variant requires a corroboration for it that `x` lacks.
 * @param x the signal vector in `variant.features` order.
 * @throws Error when the variant names a corroborating feature it does not have (a corrupt judge-model.json).
 */
export function confidenceOf(variant: VerdictModelVariant, index: number, pk: number, x: number[]): number {
  const c = Math.max(0, Math.min(1, interp(pk, variant.confidence[index])));
  const need = variant.confident_requires?.[index];
  if (!need) return c;
  const i = variant.features.indexOf(need.feature);
  if (i < 0) throw new Error(`judge model: confident_requires names ${need.feature}, not one of the variant's features`);
  return x[i] > need.above ? c : Math.min(c, UNCORROBORATED_CONFIDENCE_CAP);
}

/**
 * The verdict and its reported confidence for calibrated probabilities `p` of signal vector `x`: verdict k =
 * argmax p_k × w_k (`decision_weights`), confidence = {@link confidenceOf} (that verdict's trained monotone map
 * of p_k, which makes confidence ≥ 0.7 mean "right at least 9 times in 10" on the training data's out-of-fold
 * predictions, see train_judge.py; below 0.7 without the corroboration the variant requires).
 *
 * @returns the index into {@link VERDICT_CLASSES} and the confidence in [0, 1].
 */
export function decide(variant: VerdictModelVariant, p: number[], x: number[]): { index: number; confidence: number } {
  let index = 0;
  for (let k = 1; k < p.length; k++) if (p[k] * variant.decision_weights[k] > p[index] * variant.decision_weights[index]) index = k;
  return { index, confidence: confidenceOf(variant, index, p[index], x) };
}

/** The committed trained parameters (libs/text/models/judge/judge-model.json). */
export const VERDICT_MODEL = trained as unknown as VerdictModel;
