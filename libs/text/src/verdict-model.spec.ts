import checks from '../models/judge/judge-model.check.json';
import { confidenceOf, decide, interp, predictProba, VERDICT_CLASSES, VERDICT_MODEL, type VerdictModelVariant } from './verdict-model';
import { SIGNAL_NAMES } from './verdict-signals';

describe('trained verdict model (TypeScript inference of judge-model.json)', () => {
  it('has the signal names the TypeScript code computes, in the same order, for both variants', () => {
    expect(VERDICT_MODEL.variants.semantic.features).toEqual([...SIGNAL_NAMES]);
    expect(VERDICT_MODEL.variants.lexical.features).toEqual([...SIGNAL_NAMES]);
  });

  it('reproduces scikit-learn predict_proba and the confidence map on the vectors train_judge.py wrote', () => {
    expect(checks.length).toBeGreaterThanOrEqual(4);
    for (const c of checks as { variant: 'rsm' | 'semantic' | 'lexical'; x: number[]; proba: number[]; verdict: string; confidence: number }[]) {
      const variant = VERDICT_MODEL.variants[c.variant]!;
      const p = predictProba(variant, c.x);
      p.forEach((v, i) => expect(v).toBeCloseTo(c.proba[i], 9));
      const d = decide(variant, p, c.x);
      expect(VERDICT_CLASSES[d.index]).toBe(c.verdict);
      expect(d.confidence).toBeCloseTo(c.confidence, 9);
    }
  });

  it('interpolates like numpy.interp (clamped ends)', () => {
    const k = { x: [0, 0.5, 1], y: [0, 0.7, 1] };
    expect(interp(-1, k)).toBe(0);
    expect(interp(0.25, k)).toBeCloseTo(0.35, 12);
    expect(interp(0.75, k)).toBeCloseTo(0.85, 12);
    expect(interp(2, k)).toBe(1);
  });

  it("maps each verdict's probability to confidence monotonically, below 0.7 for a coin toss", () => {
    for (const variant of [VERDICT_MODEL.variants.semantic, VERDICT_MODEL.variants.lexical]) {
      for (const knots of variant.confidence) {
        let last = -1;
        for (let p = 0; p <= 1; p += 0.01) {
          const c = interp(p, knots);
          expect(c).toBeGreaterThanOrEqual(last);
          last = c;
        }
        expect(interp(1 / 3, knots)).toBeLessThan(0.7);
      }
    }
  });

  it("caps a verdict's confidence below 0.7 when the corroboration its variant requires is missing", () => {
    const variant: VerdictModelVariant = {
      features: ['a', 'heading'],
      estimator: {
        kind: 'logistic',
        mean: [0, 0],
        scale: [1, 1],
        coef: [
          [0, 0],
          [0, 0],
          [0, 0],
        ],
        intercept: [0, 0, 0],
      },
      calibration: { method: 'sigmoid', a: [-1, -1, -1], b: [0, 0, 0] },
      decision_weights: [1, 1, 1],
      confidence: [0, 1, 2].map(() => ({ x: [0, 0.6, 1], y: [0, 0.7, 1] })),
      confident_requires: [{ feature: 'heading', above: 0 }, null, null],
    };
    expect(confidenceOf(variant, 0, 0.8, [1, 0.25])).toBeCloseTo(0.85, 9);
    expect(confidenceOf(variant, 0, 0.8, [1, 0])).toBe(0.69);
    expect(confidenceOf(variant, 0, 0.3, [1, 0])).toBeCloseTo(0.35, 9);
    expect(confidenceOf(variant, 2, 0.8, [1, 0])).toBeCloseTo(0.85, 9);
    expect(() => confidenceOf({ ...variant, confident_requires: [{ feature: 'missing', above: 0 }, null, null] }, 0, 0.8, [1, 1])).toThrow(/missing/);
  });
});
