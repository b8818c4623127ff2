#!/usr/bin/python3
"""Generate reference values for TransformerLens's attention-head detectors.

What it makes
    tests/data/analysis/head_detectors.json: a few small cases, each with
    `tokens` (int list, length 8..20), `pattern` (float [n_heads][T][T], causal
    attention patterns, rows summing to 1 up to 8-significant-digit rounding),
    the three 0/1 `detection_patterns` ([T][T]) and the per-head `scores`
    under several flag settings, plus a `batch` entry (mean over prompts as
    `detect_head` does for a list of prompts).

Where the expected values come from
    They are computed by TransformerLens's own code, not re-implemented here:
    the unmodified file transformer_lens/head_detector.py from
    https://github.com/TransformerLensOrg/TransformerLens at commit
    4cd36aaeb5dad931d085bd5d46a12b402fe15272 (blob e05ad641222494cafc207c461197d3133d7bf43c,
    sha256 36b7683cc64121c773fade3eadd3545d6a2773bac070c322ae0059f204e6b0f2),
    saved outside the project as /work/tl_src/head_detector.py.
    TransformerLens itself cannot be imported with torch 1.13, so this script
    loads only that file via importlib after putting minimal hand-written stub
    modules into sys.modules for what it imports:
      transformer_lens.ActivationCache / .HookedTransformer (empty classes, used
      only in type annotations) and transformer_lens.utilities (is_square,
      is_lower_triangular, same definitions as TL's utilities/tensors.py).
    Functions used: get_previous_token_head_detection_pattern,
    get_duplicate_token_head_detection_pattern,
    get_induction_head_detection_pattern,
    compute_head_attention_similarity_score, and detect_head (driven by a tiny
    fake model whose run_with_cache returns the stored patterns) to check the
    per-head scores and produce the batch means.

    Tokens are passed to the TL pattern functions as a [1, T] tensor, as
    detect_head does (model.to_tokens(seq).cpu()). Patterns are float64 tensors
    built from exactly the numbers written to the JSON, so every score is
    reproducible from the file alone.

Command (from the repository root, Debian's python with torch 1.13 + numpy):
    /usr/bin/python3 tools/make_detector_reference.py \
        --tl-src /work/tl_src/head_detector.py \
        --out tests/data/analysis/head_detectors.json
"""

import argparse
import importlib.util
import json
import sys
import types

import numpy as np
import torch

TL_COMMIT = "4cd36aaeb5dad931d085bd5d46a12b402fe15272"
TL_PATH = "transformer_lens/head_detector.py"
SEED = 20240611
COMMAND = ("/usr/bin/python3 tools/make_detector_reference.py "
           "--tl-src /work/tl_src/head_detector.py "
           "--out tests/data/analysis/head_detectors.json")


# --------------------------------------------------------------------------
# Load TL's head_detector.py with minimal stubs.
# --------------------------------------------------------------------------
def load_tl_head_detector(path):
    def _mod(name, **attrs):
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        sys.modules[name] = m
        return m

    pkg = _mod("transformer_lens")
    pkg.__path__ = []  # mark as a package

    class ActivationCache:  # only used in annotations
        pass

    class HookedTransformer:  # only used in annotations
        pass

    def is_square(x):
        return x.ndim == 2 and x.shape[0] == x.shape[1]

    def is_lower_triangular(x):
        if not is_square(x):
            return False
        return x.equal(x.tril())

    _mod("transformer_lens.ActivationCache", ActivationCache=ActivationCache)
    _mod("transformer_lens.HookedTransformer", HookedTransformer=HookedTransformer)
    _mod("transformer_lens.utilities", is_square=is_square,
         is_lower_triangular=is_lower_triangular)
    try:
        import typing_extensions  # noqa: F401  (Debian ships it)
    except ImportError:
        import typing
        _mod("typing_extensions", Literal=typing.Literal, get_args=typing.get_args)

    spec = importlib.util.spec_from_file_location("transformer_lens.head_detector", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["transformer_lens.head_detector"] = mod
    spec.loader.exec_module(mod)
    return mod


# --------------------------------------------------------------------------
# Fake model so that TL's detect_head can run on stored patterns.
# --------------------------------------------------------------------------
class _Cfg:
    def __init__(self, n_heads):
        self.device = "cpu"
        self.n_ctx = 1024
        self.n_layers = 1
        self.n_heads = n_heads
        self.dtype = torch.float64


class FakeModel:
    """`seq` strings are case names; to_tokens/run_with_cache serve stored data."""

    def __init__(self, cases, n_heads):
        self.cfg = _Cfg(n_heads)
        self.cases = {c["name"]: c for c in cases}
        self._by_tokens = {}

    def to_tokens(self, seq):
        if isinstance(seq, list):  # detect_head calls this before recursing
            return torch.zeros(len(seq), 2, dtype=torch.long)
        toks = torch.tensor([self.cases[seq]["tokens"]], dtype=torch.long)
        self._by_tokens[tuple(toks[0].tolist())] = seq
        return toks

    def run_with_cache(self, tokens, remove_batch_dim=True):
        assert remove_batch_dim and tokens.shape[0] == 1
        name = self._by_tokens[tuple(tokens[0].tolist())]
        pat = torch.tensor(self.cases[name]["pattern"], dtype=torch.float64)

        class _Cache:
            def __getitem__(self, key):
                assert key == ("pattern", 0, "attn"), key
                return pat.clone()  # fresh copy: TL zeroes it in place

        return None, _Cache()


# --------------------------------------------------------------------------
# Case construction.
# --------------------------------------------------------------------------
BOS = 1


def causal_softmax(logits):
    T = logits.shape[0]
    masked = np.where(np.tril(np.ones((T, T), dtype=bool)), logits, -np.inf)
    masked = masked - masked.max(axis=1, keepdims=True)
    e = np.exp(masked)
    return e / e.sum(axis=1, keepdims=True)


def rounded(p):
    # 8 significant digits; upper triangle stays exactly 0.0
    return [[[float("%.8g" % v) for v in row] for row in head] for head in p]


def boosted_head(rng, targets, T, bonus=5.0, noise=1.0):
    """Softmax head with +bonus on target keys per query row; rows without a
    target put the bonus on key 0 (BOS sink)."""
    logits = rng.normal(0.0, noise, size=(T, T))
    for i in range(T):
        tg = targets[i] if targets[i] else [0]
        for j in tg:
            logits[i, j] += bonus
    return causal_softmax(logits)


def make_heads(rng, tokens):
    T = len(tokens)
    H = []
    # 0: clean previous-token head (one-hot on i-1; row 0 on key 0)
    prev = np.zeros((T, T))
    prev[0, 0] = 1.0
    for i in range(1, T):
        prev[i, i - 1] = 1.0
    H.append(prev)
    # 1: induction head: keys j (1<=j<=i) with tokens[j-1] == tokens[i], j-1 < i
    ind = [[j for j in range(1, i + 1) if tokens[j - 1] == tokens[i] and j - 1 < i]
           for i in range(T)]
    H.append(boosted_head(rng, ind, T))
    # 2: duplicate-token head: keys j < i with tokens[j] == tokens[i]
    dup = [[j for j in range(i) if tokens[j] == tokens[i]] for i in range(T)]
    H.append(boosted_head(rng, dup, T))
    # 3, 4: random heads
    for _ in range(2):
        H.append(causal_softmax(rng.normal(0.0, 1.5, size=(T, T))))
    return np.stack(H)


def make_token_cases(rng):
    cases = []
    # repeated random sequence as in TL's induction tests: [BOS, r, r]
    n = 7
    r = rng.choice(np.arange(1000, 50000), size=n, replace=False).tolist()
    cases.append(("repeated_random", [BOS] + r + r))
    # small vocabulary: many duplicates, including adjacent repeats
    toks = [BOS] + rng.integers(10, 14, size=11).tolist()
    toks[5] = toks[4]  # guarantee tokens[i] == tokens[i-1] somewhere
    cases.append(("small_vocab", toks))
    # BOS id re-appears mid-sequence (separator): key 0 is a duplicate target
    toks = [BOS] + rng.integers(20, 24, size=4).tolist() + [BOS] + \
        rng.integers(20, 24, size=4).tolist()
    cases.append(("bos_repeated", toks))
    # longer mixed sequence with a repeated span
    span = rng.integers(100, 108, size=6).tolist()
    toks = [BOS] + rng.integers(100, 108, size=4).tolist() + span + \
        rng.integers(100, 108, size=3).tolist() + span
    cases.append(("mixed_long", toks))
    # all distinct: duplicate / induction detection patterns are all zero
    toks = [BOS] + rng.choice(np.arange(200, 300), size=7, replace=False).tolist()
    cases.append(("no_repeats", toks))
    return cases


KINDS = [
    ("previous_token", "previous_token_head"),
    ("duplicate_token", "duplicate_token_head"),
    ("induction", "induction_head"),
]

VARIANTS = [
    ("scores", dict(exclude_bos=False, exclude_current_token=False, error_measure="mul")),
    ("scores_exclude_bos", dict(exclude_bos=True, exclude_current_token=False, error_measure="mul")),
    ("scores_exclude_current", dict(exclude_bos=False, exclude_current_token=True, error_measure="mul")),
    ("scores_exclude_both", dict(exclude_bos=True, exclude_current_token=True, error_measure="mul")),
    ("scores_abs", dict(exclude_bos=False, exclude_current_token=False, error_measure="abs")),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tl-src", default="/work/tl_src/head_detector.py")
    ap.add_argument("--out", default="tests/data/analysis/head_detectors.json")
    args = ap.parse_args()

    hd = load_tl_head_detector(args.tl_src)
    rng = np.random.default_rng(SEED)

    cases = []
    for name, tokens in make_token_cases(rng):
        assert 8 <= len(tokens) <= 20, (name, len(tokens))
        tokens = [int(t) for t in tokens]
        pattern = rounded(make_heads(rng, tokens))
        tok_t = torch.tensor([tokens], dtype=torch.long)  # [1, T] like detect_head
        det = {}
        for key, head_name in KINDS:
            fn = getattr(hd, "get_%s_detection_pattern" % head_name)
            D = fn(tok_t)
            D1 = fn(tok_t[0])  # [T] input gives the same result
            assert torch.equal(D, D1)
            assert set(D.unique().tolist()) <= {0.0, 1.0}
            det[key] = D
        case = {
            "name": name,
            "tokens": tokens,
            "pattern": pattern,
            "detection_patterns": {k: D.to(torch.int64).tolist() for k, D in det.items()},
        }
        for vname, kw in VARIANTS:
            out = {}
            for key, _ in KINDS:
                vals = []
                for h in range(len(pattern)):
                    A = torch.tensor(pattern[h], dtype=torch.float64)  # fresh: TL mutates A
                    vals.append(float(hd.compute_head_attention_similarity_score(
                        A, detection_pattern=det[key], **kw)))
                out[key] = vals
            case[vname] = out
        cases.append(case)

    n_heads = len(cases[0]["pattern"])
    assert all(len(c["pattern"]) == n_heads for c in cases)
    model = FakeModel(cases, n_heads)

    # Cross-check: TL's detect_head on each single prompt reproduces the scores.
    flagmap = {"scores": {}, "scores_exclude_bos": dict(exclude_bos=True),
               "scores_exclude_current": dict(exclude_current_token=True),
               "scores_exclude_both": dict(exclude_bos=True, exclude_current_token=True),
               "scores_abs": dict(error_measure="abs")}
    for c in cases:
        for vname, kw in flagmap.items():
            for key, head_name in KINDS:
                got = hd.detect_head(model, c["name"], head_name, **kw)[0].tolist()
                assert got == c[vname][key], (c["name"], vname, key, got, c[vname][key])

    # Batch: detect_head with a list of prompts = unweighted mean of per-prompt scores.
    names = [c["name"] for c in cases]
    batch = {"case_names": names,
             "note": "detect_head(model, [prompts], head_name) with default flags: "
                     "torch.stack(per-prompt scores).mean(0)",
             "scores_mean": {}}
    for key, head_name in KINDS:
        got = hd.detect_head(model, names, head_name)[0].tolist()
        manual = np.mean([c["scores"][key] for c in cases], axis=0)
        assert np.allclose(got, manual, rtol=0, atol=1e-15)
        batch["scores_mean"][key] = got

    doc = {
        "source": ("Expected values computed by TransformerLens's own functions "
                   "(get_*_detection_pattern, compute_head_attention_similarity_score, "
                   "detect_head) from %s at github.com/TransformerLensOrg/TransformerLens "
                   "commit %s, loaded standalone with minimal stubs; patterns are float64 "
                   "tensors of exactly the values stored here; tokens passed as [1, T]." %
                   (TL_PATH, TL_COMMIT)),
        "command": COMMAND,
        "seed": SEED,
        "heads": ["previous-token (one-hot)", "induction (boosted)", "duplicate-token (boosted)",
                  "random", "random"],
        "variants": {v: kw for v, kw in VARIANTS},
        "cases": cases,
        "batch": batch,
    }
    with open(args.out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print("wrote %s (%d cases)" % (args.out, len(cases)))


if __name__ == "__main__":
    main()
