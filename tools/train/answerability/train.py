"""Trains the answerability model of the embedded answerer (libs/text/src/answerability.ts).

Input: the JSON lines of dump-features.mjs (one SQuAD 2.0 question each: the signal vector of every
candidate sentence, `y` = 1 where the sentence holds a gold answer, the article and its split).
Only the `tune` split is used for fitting; `report` figures are printed for information.

For each variant (`semantic`: with the embedding model's similarity; `lexical`: without it):
1. Sentence ranker: LogisticRegression over the sentence signals, label = the sentence holds a gold answer.
2. Confidence model: LogisticRegression over question signals computed from the ranked sentences
   exactly as questionSignals() in TypeScript (top logit, margin, max similarity, top coverage,
   typed question, answer-type match, question terms and names absent from every passage, the top
   sentence's passage coverage, negation mismatch and rarest missing term), label = the top sentence holds a gold answer. The sentence
   logits it is trained on are out-of-fold (leave-one-article-out), so it learns from rankings of
   unseen articles.
3. Calibration: Platt scaling (Platt 1999; a one-feature LogisticRegression) on out-of-fold decision
   values of step 2. Strictly monotone and smooth, so questions do not pile up on the plateaus of an
   isotonic step function and a cut-off between two probabilities moves few questions at a time.
4. Abstention cut-off (choose_threshold): on the final models' calibrated probabilities for the tune
   split (what the service computes). The product answers what the documents answer and expresses
   doubt through confidence < 0.7, so abstention is kept for questions it is very sure are
   unanswerable: the HIGHEST cut-off at which the gold answer is still in the top sentence for
   >= 75 % of the answerable tune questions (the issue's first target), which declines as many
   unanswerable questions as that allows; when even a cut-off of 0 (answer everything) gives
   < 75 %, the highest cut-off that loses at most 2 points of that figure against answering
   everything. Between the cut-off and 0.7 (decisions.md) the service answers, flagged as unsure;
   below it, it abstains.
Writes the parameters (answerability-model.json) and test vectors (test-vectors.json) with
scikit-learn's own outputs, which the TypeScript test reproduces.
"""
import argparse
import json
import sys

import numpy as np
import sklearn
from sklearn.linear_model import LogisticRegression

SEED = 0
C = 1.0
GOLD_FIRST_TARGET = 0.75
# fallback when even answering everything misses GOLD_FIRST_TARGET: the most gold-first (absolute,
# answerable questions) the cut-off may give up against a cut-off of 0
GOLD_FIRST_MAX_LOSS = 0.02


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def sentence_lr(rows, variant):
    X = np.array([v for r in rows for v in r[variant]], dtype=float)
    y = np.array([t for r in rows for t in r["y"]], dtype=int)
    return LogisticRegression(C=C, max_iter=2000, random_state=SEED).fit(X, y)


def question_vectors(rows, variant, lr):
    """questionSignals() of answerability.ts, from the sentence model `lr`. Returns X, y, the top feature rows."""
    X, y, special = [], [], []
    for r in rows:
        F = np.array(r[variant], dtype=float)
        z = lr.decision_function(F)
        # ties: the TS sort is stable on passage/sentence order, which is the dump's order
        order = sorted(range(len(z)), key=lambda i: (-z[i], i))
        top = order[0]
        second = z[order[1]] if len(order) > 1 else z[top] - 5
        ctx = r["context"]
        X.append([z[top], z[top] - second, F[:, 0].max(), F[top, 2], F[top, 8], F[top, 9], ctx[0], ctx[1], F[top, 5], F[top, 12], F[top, 13], F[top, 14]])
        y.append(r["y"][top])
        special.append(bool(np.all(F[:, 2] == 0)))  # no question term in any sentence: confidence 0 (as in TS)
    return np.array(X), np.array(y), np.array(special)


def out_of_fold(rows, variant):
    """Question vectors whose sentence logits come from a ranker that did not see the article."""
    arts = sorted({r["article"] for r in rows})
    X, y, sp, grp = [], [], [], []
    for a in arts:
        train = [r for r in rows if r["article"] != a]
        test = [r for r in rows if r["article"] == a]
        lr = sentence_lr(train, variant)
        Xa, ya, spa = question_vectors(test, variant, lr)
        X.append(Xa)
        y.append(ya)
        sp.append(spa)
        grp += [a] * len(test)
    return np.vstack(X), np.concatenate(y), np.concatenate(sp), np.array(grp)


def figures(p, rows, threshold):
    ans = np.array([r["answerable"] for r in rows])
    right = np.array([bool(r["_right"]) for r in rows])
    answered = p >= threshold
    gf = float(np.mean((answered & right)[ans])) if ans.any() else 0.0
    ab = float(np.mean((~answered)[~ans])) if (~ans).any() else 0.0
    conf = p >= 0.7
    return {
        "gold_first": round(gf, 4),
        "abstained_unanswerable": round(ab, 4),
        "confident_precision": round(float(np.mean(right[conf])), 4) if conf.any() else None,
        "confident_coverage": round(float(np.mean(conf)), 4),
        "top_sentence_right_answerable": round(float(np.mean(right[ans])), 4),
    }


def gold_first_at(p, rows, threshold):
    """Share (0-1, unrounded) of answerable questions answered (p >= threshold) with the gold answer in the top sentence."""
    ans = np.array([r["answerable"] for r in rows])
    right = np.array([bool(r["_right"]) for r in rows])
    return float(np.mean(((p >= threshold) & right)[ans])) if ans.any() else 0.0


def choose_threshold(p, rows):
    """Abstention cut-off (a calibrated probability in [0, 1]) from the tune split's probabilities `p`
    and rows (with `_right`, `answerable`): the highest candidate (0 or a value of `p`) whose
    gold-first share stays >= GOLD_FIRST_TARGET; when a cut-off of 0 already misses it, the highest
    whose gold-first share is >= gold-first at 0 minus GOLD_FIRST_MAX_LOSS. Gold-first only falls as
    the cut-off rises, so the highest candidate meeting the floor maximises abstention under it."""
    at_zero = gold_first_at(p, rows, 0.0)
    floor = GOLD_FIRST_TARGET if at_zero >= GOLD_FIRST_TARGET else at_zero - GOLD_FIRST_MAX_LOSS
    best_t = 0.0
    for t in np.unique(np.concatenate([[0.0], p])):
        if gold_first_at(p, rows, t) >= floor - 1e-12:
            best_t = max(best_t, float(t))
    return best_t


def train_variant(rows, report_rows, variant):
    # 1. sentence ranker on every tune sentence
    sent = sentence_lr(rows, variant)
    # 2. confidence model on out-of-fold question vectors
    Xq, yq, sp, grp = out_of_fold(rows, variant)
    qlr = LogisticRegression(C=C, max_iter=2000, random_state=SEED).fit(Xq, yq)
    # 3. Platt calibration on out-of-fold decisions of the confidence model
    dec = np.zeros(len(yq))
    for a in sorted(set(grp)):
        m = grp == a
        dec[m] = LogisticRegression(C=C, max_iter=2000, random_state=SEED).fit(Xq[~m], yq[~m]).decision_function(Xq[m])
    platt = LogisticRegression(C=1e6, max_iter=2000, random_state=SEED).fit(dec.reshape(-1, 1), yq)
    cal = lambda d: platt.predict_proba(np.asarray(d, dtype=float).reshape(-1, 1))[:, 1]
    p_oof = np.where(sp, 0.0, cal(dec))
    # rows in the out-of-fold order
    order = []
    for a in sorted(set(grp)):
        order += [r for r in rows if r["article"] == a]
    for r, right in zip(order, yq):
        r["_right"] = int(right)
    # 4. threshold, on the final models' probabilities for the tune split (what runs in the service)
    Xt, yt, spt = question_vectors(rows, variant, sent)
    for r, right in zip(rows, yt):
        r["_right"] = int(right)
    p_tune = np.where(spt, 0.0, cal(qlr.decision_function(Xt)))
    best_t = choose_threshold(p_tune, rows)
    tune_final = figures(p_tune, rows, best_t)
    for r, right in zip(order, yq):
        r["_right"] = int(right)
    tune_fig = figures(p_oof, order, best_t)
    # report split with the final models
    Xr, yr, spr = question_vectors(report_rows, variant, sent)
    for r, right in zip(report_rows, yr):
        r["_right"] = int(right)
    p_rep = np.where(spr, 0.0, cal(qlr.decision_function(Xr)))
    rep_fig = figures(p_rep, report_rows, best_t)
    params = {
        "sentence": {"coef": sent.coef_[0].tolist(), "intercept": float(sent.intercept_[0])},
        "question": {"coef": qlr.coef_[0].tolist(), "intercept": float(qlr.intercept_[0])},
        "calibration": {"a": float(platt.coef_[0][0]), "b": float(platt.intercept_[0])},
        "threshold": best_t,
    }
    # test vectors: a spread of real sentence and question vectors of the report split
    rng = np.random.default_rng(SEED)
    Xs = np.array([v for r in report_rows for v in r[variant]], dtype=float)
    pick_s = rng.choice(len(Xs), size=min(40, len(Xs)), replace=False)
    pick_q = rng.choice(len(Xr), size=min(40, len(Xr)), replace=False)
    vectors = {
        "sentence": [{"x": Xs[i].tolist(), "decision": float(sent.decision_function(Xs[i : i + 1])[0]), "probability": float(sent.predict_proba(Xs[i : i + 1])[0, 1])} for i in pick_s],
        "question": [
            {"x": Xr[i].tolist(), "decision": float(qlr.decision_function(Xr[i : i + 1])[0]), "calibrated": float(cal(qlr.decision_function(Xr[i : i + 1]))[0])}
            for i in pick_q
        ],
    }
    return params, vectors, {"tune_out_of_fold": tune_fig, "tune_final_model": tune_final, "report": rep_fig, "threshold": best_t}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--features", required=True)
    ap.add_argument("--model-out", required=True)
    ap.add_argument("--vectors-out", required=True)
    ap.add_argument("--dataset", required=True)
    a = ap.parse_args()
    rows = load(a.features)
    tune = [r for r in rows if r["split"] == "tune"]
    report = [r for r in rows if r["split"] == "report"]
    out = {"trained": {"dataset": a.dataset, "tune_articles": sorted({r["article"] for r in tune}), "tune_questions": len(tune),
                       "scikit_learn": sklearn.__version__, "numpy": np.__version__, "C": C, "figures": {}}}
    vectors = {}
    for variant in ("semantic", "lexical"):
        params, vec, fig = train_variant([dict(r) for r in tune], [dict(r) for r in report], variant)
        out[variant] = params
        vectors[variant] = vec
        out["trained"]["figures"][variant] = fig
        print(variant, json.dumps(fig), file=sys.stderr)
    with open(a.model_out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    with open(a.vectors_out, "w") as f:
        json.dump(vectors, f)
        f.write("\n")


if __name__ == "__main__":
    main()
