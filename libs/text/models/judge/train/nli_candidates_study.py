"""How many candidate sentences the entailment cross-encoder must score per requirement (NLI_CANDIDATES).

Reads the signal dumps of `npm run train:judge -- --with-nli` (~/.cache/kb-platform/judge-train/*.jsonl, or
the files given), whose `nli_scores` hold the cross-encoder's scores of every scored candidate (best first),
and fits exactly what train_judge.py fits for the `nli` variant with the signals of only the first K
candidates, K = 1, 2, 3, 4, 8, on the `train` split only (the held-out rows are not read). Prints, per K:
out-of-fold macro-F1 and calibrated log-loss, and the model's confident (>= 0.7) verdicts out of fold per
source (precision, count, coverage) with the per-source, cross-fitted confidence rule of train_judge.py.
Usage: OMP_NUM_THREADS=1 ~/.cache/kb-platform/venv/bin/python libs/text/models/judge/train/nli_candidates_study.py [DUMP ...]
"""
import json
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_judge as T  # noqa: E402

warnings.filterwarnings("ignore", category=UserWarning)  # sample weights with a Pipeline (calibration only)
WORK = os.path.expanduser("~/.cache/kb-platform/judge-train")
dumps = sys.argv[1:] or [os.path.join(WORK, f"{n}.jsonl") for n in ("scifact", "contractnli", "policy")]
rows = [r for r in T.load(dumps) if r["split"] == "train"]
names = json.load(open(os.path.join(WORK, "signal-names.json"))) + json.load(open(os.path.join(WORK, "nli-signal-names.json")))
# the dumps' own nli vector (scored with the NLI_CANDIDATES of the dump run) must be what nli_vector derives
k_dump = max(len(r["nli_scores"]) for r in rows if r.get("nli_scores"))
bad = sum(1 for r in rows if r.get("nli") and max(abs(a - b) for a, b in zip(r["nli"], T.nli_vector(r, k_dump))) > 1e-9)
print(f"rows {len(rows)}, candidates scored in the dumps <= {k_dump}, vectors not reproduced: {bad}")
for k in [1, 2, 3, 4, 8]:
    if k > k_dump:
        continue
    T.NLI_CANDIDATES = k
    _, _, info, _ = T.fit_variant(rows, names, "nli")
    keep = ["estimator", "calibrated_cv_log_loss", "oof_macro_f1", "confident_threshold_per_class", "crossfit_confident", "oof_confident_per_source"]
    print(f"K={k}", json.dumps({key: info[key] for key in keep if key in info}))
