"""Trains the answerability model of the embedded answerer (libs/text/src/answerability.ts).

Input: the JSON lines of dump-features.mjs (one question each -- SQuAD 2.0, and the product question
set over ../shared/corpus (`source: product`) -- with the signal vector of every candidate sentence,
`y` = 1 where the sentence holds a gold answer, the article (leave-one-out group) and its split).
Only the `tune` split of both is used for fitting and for the cut-off; `report` figures (per source,
with the Brier score and a reliability table of the answers that cite) are printed for information.

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
   split (what the service computes). Two rules decline before the cut-off and are counted as
   declined in every figure here, exactly as the service declines them (decideAnswerability): no
   question term in any sentence, and the coverage floor (the best retrieved passage covers less than
   MIN_ANSWER_COVERAGE of the question's IDF-weighted content terms). The cut-off is the HIGHEST at
   which, on each tune source (SQuAD 2.0 tune articles; the product question set's tune half,
   product-set.mjs), the gold answer is in the top sentence of >= 75 % of the answerable questions
   and <= 5 % of them are declined -- or, where the two rules alone already miss a bound on that
   source, the cut-off may cost at most 1 more point of it. Every bound falls monotonically with the
   cut-off, so the highest feasible one declines the most unanswerable questions under them.
   Between the cut-off and 0.7 (decisions.md) the service answers, flagged as unsure; below it, it
   abstains.
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
# at most this share of the answerable questions may be declined (the brief of issue 13's third round)
DECLINED_MAX = 0.05
# where the no-shared-term rule and the coverage floor alone already miss a bound on a source, the
# cut-off may cost at most this much more of it (absolute share of the answerable questions)
EXTRA_LOSS = 0.01
# the coverage floor: MIN_ANSWER_COVERAGE of libs/text/src/answerability.ts (0.34, the floor of the
# extractive answerer before the trained model; feature 5 of a sentence is its passage's coverage)
MIN_ANSWER_COVERAGE = 0.34
PASSAGE_COVERAGE = 5


def load(path):
    """Rows of dump-features.mjs, each with `source` (default squad) and `_declined`: declined whatever
    the model says (no question term in any sentence, or the best passage below the coverage floor)."""
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    for r in rows:
        r.setdefault("source", "squad")
        F = np.array(r["semantic"], dtype=float)
        r["_declined"] = bool(np.all(F[:, 2] == 0) or F[:, PASSAGE_COVERAGE].max() < MIN_ANSWER_COVERAGE)
    return rows


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


def _masks(p, rows, threshold):
    ans = np.array([r["answerable"] for r in rows], dtype=bool)
    right = np.array([bool(r["_right"]) for r in rows], dtype=bool)
    declined = np.array([r["_declined"] for r in rows], dtype=bool)
    answered = (~declined) & (p >= threshold)
    return ans, right, answered


def figures(p, rows, threshold):
    """Figures of one set of questions at a cut-off, counting the rule-declined ones as declined:
    gold_first (answerable answered with the gold in the top sentence), declined_answerable,
    abstained_unanswerable (shares 0-1), confident precision/coverage (p >= 0.7), and the Brier
    score and reliability bins (0.1 wide: n, mean p, share right) of the answers that cite."""
    ans, right, answered = _masks(p, rows, threshold)
    conf = answered & (p >= 0.7)
    bins = []
    for b in range(10):
        m = answered & (np.minimum(9, np.floor(p * 10)) == b)
        if m.any():
            bins.append({"bin": f"{b / 10:.1f}-{(b + 1) / 10:.1f}", "n": int(m.sum()), "mean_p": round(float(p[m].mean()), 3), "right": round(float(right[m].mean()), 3)})
    return {
        "questions": len(rows),
        "gold_first": round(float(np.mean((answered & right)[ans])), 4) if ans.any() else None,
        "declined_answerable": round(float(np.mean((~answered)[ans])), 4) if ans.any() else None,
        "abstained_unanswerable": round(float(np.mean((~answered)[~ans])), 4) if (~ans).any() else None,
        "confident_precision": round(float(np.mean(right[conf])), 4) if conf.any() else None,
        "confident_coverage": round(float(np.mean(conf)), 4),
        "brier_of_answers": round(float(np.mean((p[answered] - right[answered]) ** 2)), 4) if answered.any() else None,
        "reliability_of_answers": bins,
    }


def by_source(p, rows, threshold):
    """figures() per source (squad, product)."""
    out = {}
    for src in sorted({r["source"] for r in rows}):
        m = np.array([r["source"] == src for r in rows])
        out[src] = figures(p[m], [r for r, k in zip(rows, m) if k], threshold)
    return out


def bounds_at(p, rows, threshold):
    """(gold-first, declined) shares of the answerable questions of `rows` at a cut-off (unrounded)."""
    ans, right, answered = _masks(p, rows, threshold)
    if not ans.any():
        return 1.0, 0.0
    return float(np.mean((answered & right)[ans])), float(np.mean((~answered)[ans]))


def choose_threshold(p, rows):
    """Abstention cut-off (a calibrated probability in [0, 1]) from the tune probabilities `p` and
    rows (with `_right`, `_declined`, `answerable`, `source`): the highest candidate (0 or a value of
    `p`) at which every source keeps gold-first >= GOLD_FIRST_TARGET and declined <= DECLINED_MAX,
    where a bound the rules alone (cut-off 0) already miss on a source is relaxed to its value at 0
    plus EXTRA_LOSS. Gold-first only falls and declined only rises as the cut-off rises."""
    limits = []
    for src in sorted({r["source"] for r in rows}):
        m = np.array([r["source"] == src for r in rows])
        sub = [r for r, k in zip(rows, m) if k]
        gf0, dec0 = bounds_at(p[m], sub, 0.0)
        gf_min = GOLD_FIRST_TARGET if gf0 >= GOLD_FIRST_TARGET else gf0 - EXTRA_LOSS
        dec_max = DECLINED_MAX if dec0 <= DECLINED_MAX else dec0 + EXTRA_LOSS
        limits.append((m, sub, gf_min, dec_max))
    best_t = 0.0
    for t in np.unique(np.concatenate([[0.0], p])):
        ok = True
        for m, sub, gf_min, dec_max in limits:
            gf, dec = bounds_at(p[m], sub, t)
            if gf < gf_min - 1e-12 or dec > dec_max + 1e-12:
                ok = False
                break
        if ok:
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
    tune_final = by_source(p_tune, rows, best_t)
    for r, right in zip(order, yq):
        r["_right"] = int(right)
    tune_fig = by_source(p_oof, order, best_t)
    # report split with the final models
    Xr, yr, spr = question_vectors(report_rows, variant, sent)
    for r, right in zip(report_rows, yr):
        r["_right"] = int(right)
    p_rep = np.where(spr, 0.0, cal(qlr.decision_function(Xr)))
    rep_fig = by_source(p_rep, report_rows, best_t)
    params = {
        "sentence": {"coef": sent.coef_[0].tolist(), "intercept": float(sent.intercept_[0])},
        "question": {"coef": qlr.coef_[0].tolist(), "intercept": float(qlr.intercept_[0])},
        "calibration": {"a": float(platt.coef_[0][0]), "b": float(platt.intercept_[0])},
        "threshold": best_t,
        "min_answer_coverage": MIN_ANSWER_COVERAGE,
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
    return params, vectors, {"tune_out_of_fold": tune_fig, "tune_final_model": tune_final, "report": rep_fig, "threshold": best_t, "min_answer_coverage": MIN_ANSWER_COVERAGE}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--features", required=True)
    ap.add_argument("--model-out", required=True)
    ap.add_argument("--vectors-out", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--product", default=None, help="the product question set the features include (recorded in the model file)")
    a = ap.parse_args()
    rows = load(a.features)
    tune = [r for r in rows if r["split"] == "tune"]
    report = [r for r in rows if r["split"] == "report"]
    out = {"trained": {"dataset": a.dataset, "product_set": a.product, "tune_articles": sorted({r["article"] for r in tune}), "tune_questions": len(tune),
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
