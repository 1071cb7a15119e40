"""The fixed-split hash shared by the training scripts and tools/eval/verdicts.ts `splitOf`.

FNV-1a 32-bit (Fowler, Noll, Vo) of a text's UTF-16 first code units, as JavaScript's `charCodeAt(0)` of each
code point gives them, finished with MurmurHash3's fmix32 (Appleby), which spreads FNV's low bits (ids
differing in one digit). Written once here; train_nli.py (`split_of`), train_rsm.py and train_judge.py
(`half_of`) use it.
"""


def fnv_fmix(text):
    """32-bit hash of `text` (see the module doc); equals tools/eval/verdicts.ts's hash of the same string."""
    h = 0x811C9DC5
    for ch in text:
        code = ord(ch)
        h ^= code if code < 0x10000 else (0xD800 + ((code - 0x10000) >> 10))
        h = (h * 0x01000193) & 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h


def half_of(dataset, group):
    """`ce` or `judge`: which half of the `train` split's groups of an entailment dataset (SciFact by smallest
    cited abstract, ContractNLI by NDA, the policy cases by document) trains the requirement-satisfaction model
    (train_rsm.py), and which half holds the rows where its readings are out of sample (train_judge.py), so the
    judge's confidence is fitted on readings of pairs the model never saw (stacking without leakage; Wolpert
    1992)."""
    return "ce" if fnv_fmix(f"rsm-half:{dataset}:{group}") % 2 == 0 else "judge"
