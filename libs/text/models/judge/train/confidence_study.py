"""How much confident (>= 0.7) verdict coverage the embedded judge's model can give at >= 0.9 precision.

Reads the signal dumps that `npm run train:judge` writes (~/.cache/kb-platform/judge-train/*.jsonl,
or the files given) and fits exactly what train_judge.py fits, on the `train` split only, then prints:
1. per predicted class, the precision of the k most probable out-of-fold verdicts (k = 10, 20, 40,
   80): no confidence map can pin 0.7 at >= 0.9 precision on a class whose top 10 are not right 9
   times in 10;
2. a second model that predicts "this verdict is right" (logistic regression over the signals, the
   calibrated probabilities, the verdict and its margin; out of fold by the same groups): the
   precision of its k highest-scored verdicts;
3. the held-out figures (macro-F1, confident precision and coverage) for the out-of-fold precision
   target of the confidence map at 0.92 (today), 0.90 and 0.88.
Usage: OMP_NUM_THREADS=1 ~/.cache/kb-platform/venv/bin/python libs/text/models/judge/train/confidence_study.py [DUMP ...]
"""
import json
import os
import sys

import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_judge as T  # noqa: E402

WORK = os.path.expanduser("~/.cache/kb-platform/judge-train")
dumps = sys.argv[1:] or [os.path.join(WORK, f"{n}.jsonl") for n in ("scifact", "contractnli", "policy")]
rows = T.load(dumps)
names = json.load(open(os.path.join(WORK, "signal-names.json")))
train = [r for r in rows if r["split"] == "train" and r.get("semantic") is not None]
X, y = T.matrix(train, "semantic")
groups = np.array([r.get("group") or T.group_of(r) for r in train])
weight = np.array([T.POLICY_WEIGHT if r["dataset"] == "policy" else 1.0 for r in train])
model, params, info, _ = T.fit_variant(rows, names, "semantic")
cal = CalibratedClassifierCV(T.make_gb(), method=info["calibration"], cv=3, ensemble=False)
oof = cross_val_predict(cal, X, y, cv=GroupKFold(n_splits=5), groups=groups, method="predict_proba", params={"sample_weight": weight})
pred = (oof * np.array(params["decision_weights"])).argmax(axis=1)
for c, name in enumerate(T.CLASSES):
    idx = np.where(pred == c)[0]
    top = idx[np.argsort(-oof[idx, c])]
    print(name, "verdicts", len(idx), "precision of the k most probable:", {k: round(float((y[top[:k]] == c).mean()), 2) for k in (10, 20, 40, 80) if k <= len(top)})
right = (pred == y).astype(int)
srt = np.sort(oof, axis=1)
Z = np.hstack([X, oof, np.eye(3)[pred], srt[:, -1:] - srt[:, -2:-1], oof[np.arange(len(oof)), pred][:, None]])
q = cross_val_predict(make_pipeline(StandardScaler(), LogisticRegression(C=0.3, max_iter=3000)), Z, right, cv=GroupKFold(n_splits=5), groups=groups, method="predict_proba")[:, 1]
order = np.argsort(-q)
print("correctness model: precision of the k highest:", {k: round(float(right[order[:k]].mean()), 2) for k in (10, 20, 50, 100)})
for target in (0.92, 0.90, 0.88):
    T.TARGET_PRECISION = target
    m, p, meta, _ = T.fit_variant(rows, names, "semantic")
    held = T.report(m, p, rows, "semantic")
    print("target", target, "thresholds", meta["confident_threshold_per_class"], {d: {k: v[k] for k in ("macro_f1", "confident_precision", "confident_coverage")} for d, v in held.items()})
