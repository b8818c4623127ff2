#!/usr/bin/python3
"""PosLens reference implementation: the PosLens model format (docs/poslens-format.md) in PyTorch.

Drop `PosLensModel` into a training script (with the three modules beside it:
poslens_pe_components.py, one class per position-encoding component; poslens_pe_kernels.py, their
formulas; poslens_safetensors.py, file I/O) and `save_pretrained(model, folder)` writes a
checkpoint PosLens reads: config.json + model.safetensors (or model.pt). Formulas: docs/formulas.md §2;
numerical conventions: core/position/<method>.h.

    config = PosLensConfig(d_model=256, n_layers=4, n_heads=4, d_mlp=1024, vocab_size=32000,
                           n_ctx=1024, position_encoding=[{"type": "rope"}, {"type": "cope",
                           "npos_max": 64}])
    model = PosLensModel(config)
    logits = model(input_ids)                             # [batch, pos, vocab]
    logits, caps = model(input_ids, capture=True)         # + every hook of docs/formulas.md §1
    save_pretrained(model, "ckpt")                        # config.json + model.safetensors
    model = load_pretrained("ckpt")

CLI (Debian's PyTorch: /usr/bin/python3):
    tools/poslens_reference.py make-test-models OUTDIR [--seed N]

Conventions that the format leaves open (also in the report of the module's author):
- Masked entries (key j after query i in a causal model) of `hook_pos_scores` are 0; of
  `hook_attn_scores` -inf; of `hook_cope_gates`/`hook_cope_pos` 0.
- Every term that reads q uses the ROTATED q (and k): Shaw, Transformer-XL, CoPE z and gates.
  CoPE sep_keys: the gate keys W_g h_j (h = the normed block input) are NOT rotated. CoPE gate
  logits are the raw q·k (no Transformer-XL u, no additive biases).
- Non-causal models (`"causal": false`): ALiBi and KERPLE use the symmetric distance |i - j|,
  T5 its bidirectional buckets, Transformer-XL R_{|i-j|}, CoPE sums the gates over all keys
  t >= j. Shaw and FIRE are causal-only (a ValueError), as in the C++ runtime.
- `hook_pos_embed` is the absolute term added to the residual: P[j] for learned_absolute and
  sinusoidal, W_R s + b_R for Heinsen (whose s is `hook_pe_state`).
- `hook_rot_q`/`hook_rot_k` exist only with a rotary component (rope, hope); `hook_pos_scores`
  only with an additive or CoPE component; the CoPE hooks only with CoPE.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from collections import OrderedDict
from typing import Any, Dict, List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

Tensor = torch.Tensor

# The pieces live in modules of their own (each under ~600 lines); importing this module gives
# all of them, as before the split.
from poslens_safetensors import *  # noqa: E402,F401,F403
from poslens_pe_kernels import *  # noqa: E402,F401,F403
from poslens_pe_components import *  # noqa: E402,F401,F403

# ----------------------------------------------------------------------------------------------
# Config
# ----------------------------------------------------------------------------------------------
# Parameters of each component type with their defaults (None: required or derived, see doc).
COMPONENT_DEFAULTS: Dict[str, Dict[str, Any]] = {
    "none": {},
    "learned_absolute": {},
    "sinusoidal": {},
    "heinsen": {"d_pe": None},
    "rope": {"rope_theta": 10000.0, "pairing": "half_split", "rotary_dim": None, "rope_scaling": None},
    "hope": {"rope_theta": 10000.0, "pairing": "half_split", "L": None},
    "alibi": {},
    "shaw": {"max_distance": None, "values": False, "shared": False},
    "t5": {"num_buckets": 32, "max_distance": 128, "shared": True},
    "transformer_xl": {"shared": False},
    "kerple": {"variant": "log", "shared": False},
    "fire": {"hidden": 32, "shared": False},
    "cope": {"npos_max": None, "gates": "keys", "logit_scale": "divide_all", "position": "embedding",
             "shared": False},
}
_REQUIRED = {"heinsen": ["d_pe"], "shaw": ["max_distance"], "cope": ["npos_max"]}
_ABSOLUTE, _ROTARY = ("learned_absolute", "sinusoidal", "heinsen"), ("rope", "hope")
_CHOICES = {"pairing": ("half_split", "interleaved"), "variant": ("log", "power"),
            "gates": ("keys", "sep_keys", "values"), "logit_scale": ("divide_all", "no_div"),
            "position": ("embedding", "alibi")}


@dataclasses.dataclass
class PosLensConfig:
    """config.json of the PosLens format (docs/poslens-format.md). None = the documented default,
    not written to config.json (see `kv_heads`, `head_dim`, `scale` for the resolved values)."""
    d_model: int
    n_layers: int
    n_heads: int
    d_mlp: int
    vocab_size: int
    n_ctx: int
    n_kv_heads: Optional[int] = None
    d_head: Optional[int] = None
    norm: str = "rmsnorm"
    norm_eps: float = 1e-5
    mlp: str = "gated"
    activation: str = "silu"
    qkv_bias: bool = False
    attn_out_bias: bool = False
    mlp_bias: bool = False
    tie_word_embeddings: bool = False
    causal: bool = True
    attn_scale: Optional[float] = None
    bos_token_id: Optional[int] = None
    position_encoding: Any = dataclasses.field(default_factory=list)
    format_version: int = 1
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict)  # "architectures", "torch_dtype"

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads if self.n_kv_heads is not None else self.n_heads

    @property
    def head_dim(self) -> int:
        return self.d_head if self.d_head is not None else self.d_model // self.n_heads

    @property
    def scale(self) -> float:
        return self.attn_scale if self.attn_scale is not None else 1.0 / math.sqrt(self.head_dim)

    def components(self) -> List[Dict[str, Any]]:
        """position_encoding as a list of components with every default filled in; validated."""
        pe = self.position_encoding
        items = [pe] if isinstance(pe, dict) else list(pe or [])
        out, seen = [], set()
        for item in items:
            kind = item.get("type")
            if kind not in COMPONENT_DEFAULTS:
                raise ValueError(f"position_encoding: unknown type {kind!r}")
            if kind == "none":
                continue
            unknown = set(item) - set(COMPONENT_DEFAULTS[kind]) - {"type"}
            if unknown:
                raise ValueError(f"position_encoding {kind}: unknown parameters {sorted(unknown)}")
            for key in _REQUIRED.get(kind, []):
                if item.get(key) is None:
                    raise ValueError(f"position_encoding {kind}: {key} is required")
            spec = {**COMPONENT_DEFAULTS[kind], **item}
            for key, allowed in _CHOICES.items():
                if key in spec and spec[key] not in allowed:
                    raise ValueError(f"position_encoding {kind}: {key} must be one of {allowed}")
            if kind in seen:
                raise ValueError(f"position_encoding: {kind} given twice")
            seen.add(kind)
            out.append(spec)
        for group, what in ((_ABSOLUTE, "absolute"), (_ROTARY, "rotary")):
            if len(seen & set(group)) > 1:
                raise ValueError(f"position_encoding: more than one {what} component")
        return out

    def validate(self) -> None:
        if self.n_heads % self.kv_heads:
            raise ValueError("n_heads must be a multiple of n_kv_heads")
        if self.norm not in ("rmsnorm", "layernorm") or self.mlp not in ("gated", "plain") or \
                self.activation not in ("silu", "gelu", "gelu_tanh"):
            raise ValueError("norm / mlp / activation: unknown value")
        self.components()

    def to_dict(self) -> Dict[str, Any]:
        """Required keys, format_version and every key that differs from its default."""
        out: Dict[str, Any] = {"model_type": "poslens", "format_version": self.format_version}
        for f in dataclasses.fields(self):
            if f.name in ("extra", "format_version"):
                continue
            value = getattr(self, f.name)
            if f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            else:
                default = f.default  # MISSING for the required sizes: always written
            if value != default:
                out[f.name] = value
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "PosLensConfig":
        if d.get("model_type") != "poslens":
            raise ValueError(f"config.json: model_type must be \"poslens\", got {d.get('model_type')!r}")
        if d.get("format_version", 1) > 1:
            raise ValueError(f"config.json: format_version {d['format_version']} is newer than 1")
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        tolerated = {"model_type", "architectures", "torch_dtype", "training"}  # as the C++ reader
        unknown = sorted(set(d) - names - tolerated)
        if unknown:
            raise ValueError(f"config.json: unknown keys {unknown} for a PosLens model")
        known = {k: v for k, v in d.items() if k in names}
        extra = {k: v for k, v in d.items() if k in tolerated - {"model_type"}}
        config = cls(**known, extra=extra)
        config.validate()
        return config

    def save(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=2)
            f.write("\n")

    @classmethod
    def load(cls, path: str) -> "PosLensConfig":
        with open(path) as f:
            return cls.from_dict(json.load(f))


# ----------------------------------------------------------------------------------------------
# The transformer
# ----------------------------------------------------------------------------------------------
class RMSNorm(nn.Module):
    """HF Llama RMSNorm: weight · x / sqrt(mean(x^2) + eps), in float32."""

    def __init__(self, d, eps):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        xf = x.float()
        return self.weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def make_norm(cfg):
    if cfg.norm == "rmsnorm":
        return RMSNorm(cfg.d_model, cfg.norm_eps)
    return nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps)


def gelu_tanh(x: Tensor) -> Tensor:
    return F.gelu(x, approximate="tanh")


ACTIVATIONS = {"silu": F.silu, "gelu": F.gelu, "gelu_tanh": gelu_tanh}  # gelu: the exact erf form


class MLP(nn.Module):
    """gated: down(act(gate(x)) * up(x)); plain: down(act(up(x)))."""

    def __init__(self, cfg):
        super().__init__()
        if cfg.mlp == "gated":
            self.gate_proj = nn.Linear(cfg.d_model, cfg.d_mlp, bias=cfg.mlp_bias)
        self.up_proj = nn.Linear(cfg.d_model, cfg.d_mlp, bias=cfg.mlp_bias)
        self.down_proj = nn.Linear(cfg.d_mlp, cfg.d_model, bias=cfg.mlp_bias)
        self.activation = cfg.activation

    def forward(self, x):
        act = ACTIVATIONS[self.activation]
        if hasattr(self, "gate_proj"):
            return self.down_proj(act(self.gate_proj(x)) * self.up_proj(x))
        return self.down_proj(act(self.up_proj(x)))


class Capture:
    """Which hooks to keep: None (nothing), True / "all", a collection of names, or a predicate."""

    def __init__(self, spec):
        self.spec = {spec} if isinstance(spec, str) and spec != "all" else spec
        self.out: "OrderedDict[str, Tensor]" = OrderedDict()

    def __call__(self, name, tensor):
        s = self.spec
        if s is None or s is False:
            return
        if s is True or s == "all" or (callable(s) and s(name)) or (not callable(s) and name in s):
            self.out[name] = tensor.detach()


class Attention(nn.Module):
    """Rotary on q, k; logits scale·q·k + content terms + position terms (hook_pos_scores); mask;
    float32 softmax; z = pattern·v + value terms. `pe` holds this layer's own PE weights."""

    def __init__(self, cfg, own: List[Component], shared: List[Component], rotary: Optional[Component]):
        super().__init__()
        H, K, dh, D = cfg.n_heads, cfg.kv_heads, cfg.head_dim, cfg.d_model
        self.cfg = cfg
        self.rotate_fn = rotary.rotate if rotary is not None else None  # a plain function
        self.q_proj = nn.Linear(D, H * dh, bias=cfg.qkv_bias)
        self.k_proj = nn.Linear(D, K * dh, bias=cfg.qkv_bias)
        self.v_proj = nn.Linear(D, K * dh, bias=cfg.qkv_bias)
        self.o_proj = nn.Linear(H * dh, D, bias=cfg.attn_out_bias)
        self.pe = PEContainer(own)
        self.terms = own + shared  # attention-side components of this layer (plain list)

    def forward(self, x, positions, cap, prefix):
        cfg = self.cfg
        B, T, _ = x.shape
        H, K, dh = cfg.n_heads, cfg.kv_heads, cfg.head_dim
        q = self.q_proj(x).view(B, T, H, dh)
        k = self.k_proj(x).view(B, T, K, dh)
        v = self.v_proj(x).view(B, T, K, dh)
        cap(prefix + "hook_q", q), cap(prefix + "hook_k", k), cap(prefix + "hook_v", v)
        if self.rotate_fn is not None:
            q, k = self.rotate_fn(q, positions), self.rotate_fn(k, positions)
            cap(prefix + "hook_rot_q", q), cap(prefix + "hook_rot_k", k)
        group = H // K  # GQA: query head h reads kv head h // group
        q = q.transpose(1, 2)  # [B, H, T, dh]
        k = k.repeat_interleave(group, dim=2).transpose(1, 2)
        v = v.repeat_interleave(group, dim=2).transpose(1, 2)
        allowed = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if cfg.causal:
            allowed = allowed.tril()
        a = AttnInputs(q, k, v, x, allowed, cfg.scale, cfg.causal, positions)

        scores = (q @ k.transpose(-1, -2)) * cfg.scale
        pos = None
        for c in self.terms:
            extra = c.content(a)
            if extra is not None:
                scores = scores + extra
            term, caps = c.scores(a)
            if term is not None:
                pos = term if pos is None else pos + term
            for name, t in caps.items():
                cap(prefix + name, t)
        if pos is not None:
            pos = pos.expand(B, H, T, T).masked_fill(~allowed, 0.0)
            cap(prefix + "hook_pos_scores", pos)
            scores = scores + pos
        scores = scores.masked_fill(~allowed, float("-inf"))
        cap(prefix + "hook_attn_scores", scores)
        pattern = torch.softmax(scores.float(), dim=-1)
        cap(prefix + "hook_pattern", pattern)
        z = pattern @ v
        for c in self.terms:
            extra = c.value_term(pattern, a)
            if extra is not None:
                z = z + extra
        z = z.transpose(1, 2)  # [B, T, H, dh]
        cap(prefix + "hook_z", z)
        return self.o_proj(z.reshape(B, T, H * dh))


class Block(nn.Module):
    """x += attn(attn_norm(x)); x += mlp(mlp_norm(x))."""

    def __init__(self, cfg, own, shared, rotary):
        super().__init__()
        self.attn_norm, self.mlp_norm = make_norm(cfg), make_norm(cfg)
        self.attn = Attention(cfg, own, shared, rotary)
        self.mlp = MLP(cfg)

    def forward(self, x, positions, cap, prefix):
        cap(prefix + "hook_resid_pre", x)
        attn_out = self.attn(self.attn_norm(x), positions, cap, prefix + "attn.")
        cap(prefix + "hook_attn_out", attn_out)
        x = x + attn_out
        cap(prefix + "hook_resid_mid", x)
        mlp_out = self.mlp(self.mlp_norm(x))
        cap(prefix + "hook_mlp_out", mlp_out)
        x = x + mlp_out
        cap(prefix + "hook_resid_post", x)
        return x


class PosLensModel(nn.Module):
    """Pre-norm decoder (encoder with causal=false) of the PosLens format.

    forward(input_ids [B, T] int64, capture=None) -> logits [B, T, vocab] float32, or
    (logits, {hook name: tensor}) when capture is given (True, a collection of names, or a
    predicate on names; names as docs/formulas.md §1). `cope_slopes=False` builds CoPE-ALiBi without a
    learned `cope_slopes` (the fixed default -m_h)."""

    def __init__(self, config: PosLensConfig, cope_slopes: bool = True):
        super().__init__()
        config.validate()
        self.config = cfg = config
        specs = cfg.components()

        def build(spec):
            cls = COMPONENTS[spec["type"]]
            return cls(spec, cfg, learned_slopes=cope_slopes) if cls is CoPE else cls(spec, cfg)

        # Model-level components (absolute, rotary, shared) live in self.pe, per-layer ones in
        # blocks[L].attn.pe; `absolute` / `rotary` below are properties, not registered twice.
        absolute = [build(s) for s in specs if s["type"] in _ABSOLUTE]
        rotary = [build(s) for s in specs if s["type"] in _ROTARY]
        attention_specs = [s for s in specs if s["type"] not in _ABSOLUTE + _ROTARY]
        shared = [build(s) for s in attention_specs if s.get("shared")]
        self.tok_embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pe = PEContainer(absolute + rotary + shared)
        self.blocks = nn.ModuleList(
            Block(cfg, [build(s) for s in attention_specs if not s.get("shared")], shared,
                  rotary[0] if rotary else None)
            for _ in range(cfg.n_layers))
        self.final_norm = make_norm(cfg)
        if not cfg.tie_word_embeddings:
            self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)

    @property
    def absolute(self) -> Optional[Component]:
        return next((c for c in self.pe.components if c.kind == "absolute"), None)

    @property
    def rotary(self) -> Optional[Component]:
        return next((c for c in self.pe.components if c.kind == "rotary"), None)

    def forward(self, input_ids: Tensor, capture=None):
        cap = Capture(capture)
        B, T = input_ids.shape
        positions = torch.arange(T, device=input_ids.device)
        x = self.tok_embed(input_ids)
        cap("hook_embed", x)
        if self.absolute is not None:
            term, caps = self.absolute.embed(x, positions)
            cap("hook_pos_embed", term.expand(B, T, -1))
            for name, t in caps.items():
                cap(name, t)
            x = x + term
        for layer, block in enumerate(self.blocks):
            x = block(x, positions, cap, f"blocks.{layer}.")
        x = self.final_norm(x)
        cap("ln_final.hook_normalized", x)
        head = self.tok_embed.weight if self.config.tie_word_embeddings else self.lm_head.weight
        logits = F.linear(x, head)
        cap("logits", logits)
        return logits if capture is None else (logits, cap.out)


# ----------------------------------------------------------------------------------------------
# Checkpoints
# ----------------------------------------------------------------------------------------------
def save_pretrained(model: PosLensModel, folder: str, weights: str = "safetensors") -> None:
    """Writes config.json and model.safetensors ("safetensors"), model.pt ("pt") or
    pytorch_model.bin ("bin"; both torch.save(model.state_dict()))."""
    os.makedirs(folder, exist_ok=True)
    model.config.save(os.path.join(folder, "config.json"))
    state = model.state_dict()
    if weights == "safetensors":
        save_safetensors(state, os.path.join(folder, "model.safetensors"), {"format": "pt"})
    elif weights in ("pt", "bin"):
        torch.save(state, os.path.join(folder, "model.pt" if weights == "pt" else "pytorch_model.bin"))
    else:
        raise ValueError(f"save_pretrained: weights must be safetensors, pt or bin, got {weights!r}")


def load_pretrained(folder: str) -> PosLensModel:
    """Reads config.json and model.safetensors / model.pt / pytorch_model.bin; strict names."""
    config = PosLensConfig.load(os.path.join(folder, "config.json"))
    for name in ("model.safetensors", "model.pt", "pytorch_model.bin"):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            break
    else:
        raise FileNotFoundError(f"{folder}: no model.safetensors, model.pt or pytorch_model.bin")
    if name.endswith(".safetensors"):
        state = load_safetensors(path)[0]
    else:
        state = torch.load(path, map_location="cpu", weights_only=True)
    slopes = any(k.endswith("cope_slopes") for k in state)
    model = PosLensModel(config, cope_slopes=slopes)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ValueError(f"{path}: missing tensors {missing}, unexpected tensors {unexpected}")
    return model


def main(argv=None) -> int:
    """`make-test-models OUTDIR [--seed N] [--case NAME]...`: see poslens_test_models.py."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] != "make-test-models":
        print("usage: poslens_reference.py make-test-models OUTDIR [--seed N] [--case NAME]...",
              file=sys.stderr)
        return 2
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import poslens_test_models
    return poslens_test_models.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
