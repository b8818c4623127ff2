#!/usr/bin/python3
"""PosLens reference implementation: the PosLens model format (docs/poslens-format.md) in PyTorch.

Drop `PosLensModel` into a training script (or copy the position-encoding classes you need) and
`save_pretrained(model, folder)` writes a checkpoint PosLens reads: config.json +
model.safetensors (or model.pt). Formulas: SPEC.md §2; numerical conventions: core/<type>.h.

    config = PosLensConfig(d_model=256, n_layers=4, n_heads=4, d_mlp=1024, vocab_size=32000,
                           n_ctx=1024, position_encoding=[{"type": "rope"}, {"type": "cope",
                           "npos_max": 64}])
    model = PosLensModel(config)
    logits = model(input_ids)                             # [batch, pos, vocab]
    logits, caps = model(input_ids, capture=True)         # + every hook of SPEC.md §1
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
import struct
import sys
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

Tensor = torch.Tensor

# ----------------------------------------------------------------------------------------------
# safetensors (no Python package needed): 8-byte LE header length, JSON header, raw LE bytes.
# ----------------------------------------------------------------------------------------------
_ST = {"F64": (torch.float64, "<f8"), "F32": (torch.float32, "<f4"), "F16": (torch.float16, "<f2"),
       "BF16": (torch.bfloat16, "<i2"), "I64": (torch.int64, "<i8"), "I32": (torch.int32, "<i4"),
       "I16": (torch.int16, "<i2"), "I8": (torch.int8, "i1"), "U8": (torch.uint8, "u1"),
       "BOOL": (torch.bool, "?")}
_ST_CODE = {dt: code for code, (dt, _) in _ST.items()}


def save_safetensors(tensors: Dict[str, Tensor], path: str,
                     metadata: Optional[Dict[str, str]] = None) -> None:
    """Writes {name: tensor} (any dtype of _ST) to a .safetensors file."""
    header: Dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs, offset = [], 0
    for name, t in tensors.items():
        t = t.detach().cpu().contiguous()
        if t.dtype not in _ST_CODE:
            raise ValueError(f"save_safetensors: unsupported dtype {t.dtype} of {name}")
        code = _ST_CODE[t.dtype]
        arr = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy()
        raw = arr.astype(np.dtype(_ST[code][1]), copy=False).tobytes()
        header[name] = {"dtype": code, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # align the data to 8 bytes, as the official writer does
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def load_safetensors(path: str) -> Tuple["OrderedDict[str, Tensor]", Dict[str, str]]:
    """Reads a .safetensors file: ({name: tensor}, metadata)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", None) or {}
    out: "OrderedDict[str, Tensor]" = OrderedDict()
    for name, info in header.items():
        dtype, np_code = _ST[info["dtype"]]
        begin, end = info["data_offsets"]
        arr = np.frombuffer(data, dtype=np.dtype(np_code), count=(end - begin) // np.dtype(np_code).itemsize,
                            offset=8 + n + begin).astype(np.dtype(np_code).newbyteorder("="))
        t = torch.from_numpy(arr.copy())
        if dtype == torch.bfloat16:
            t = t.view(torch.bfloat16)
        out[name] = t.reshape(info["shape"])
    return out, metadata


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
        tolerated = {"model_type", "architectures", "torch_dtype"}  # as the C++ reader
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
# Functional kernels (shared by the components and the tests)
# ----------------------------------------------------------------------------------------------
def distance_matrix(T: int) -> Tensor:
    """int64 [T, T]: i - j (query i, key j)."""
    r = torch.arange(T)
    return r[:, None] - r[None, :]


def alibi_slopes(n_heads: int) -> List[float]:
    """m_h = 2^(-8(h+1)/H) for power-of-two H; otherwise the first P = 2^floor(log2 H) of those
    for P, then every other slope (0, 2, 4, ...) of the rule for 2P (Press et al. reference)."""
    def pow2(n):
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]
    p = 1 << (n_heads.bit_length() - 1)
    return pow2(p) if p == n_heads else pow2(p) + pow2(2 * p)[0::2][: n_heads - p]


def sinusoidal_embedding(positions: Tensor, d_model: int, interleaved: bool = True) -> Tensor:
    """float32 [n, d_model] for any positions [n]; w_k = 10000^(-2k/d_model), float64 math.
    interleaved: P[:, 2k] = sin, P[:, 2k+1] = cos (Vaswani); else [sin | cos] (Transformer-XL)."""
    w = 10000.0 ** (-2.0 * torch.arange(d_model // 2, dtype=torch.float64) / d_model)
    angle = positions.to(torch.float64)[:, None] * w[None, :]
    if interleaved:
        out = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)
    else:
        out = torch.cat([angle.sin(), angle.cos()], dim=-1)
    return out.float()


def heinsen_scan(log_p: Tensor, h: Tensor) -> Tensor:
    """Parallel scan, s_0 = 0 (a log-state): log_p, h [..., T, d] -> s [..., T, d] with
    s_i = logsumexp(log p_i + s_{i-1}, h_i). a* = cumsum(log p) with a*_0 = 0 for s_0; float64."""
    zero = torch.zeros_like(log_p[..., :1, :], dtype=torch.float64)
    a_star = torch.cat([zero, log_p.double().cumsum(-2)], dim=-2)
    values = torch.cat([zero, h.double()], dim=-2)
    s = a_star + torch.logcumsumexp(values - a_star, dim=-2)
    return s[..., 1:, :].to(log_p.dtype)


def heinsen_sequential(log_p: Tensor, h: Tensor) -> Tensor:
    """The recurrence s_i = logsumexp(log p_i + s_{i-1}, h_i), s_0 = 0, one step per position."""
    s, out = torch.zeros_like(log_p[..., 0, :], dtype=torch.float64), []
    for i in range(log_p.shape[-2]):
        s = torch.logaddexp(log_p[..., i, :].double() + s, h[..., i, :].double())
        out.append(s)
    return torch.stack(out, dim=-2).to(log_p.dtype)


def rel_shift(x: Tensor) -> Tensor:
    """Transformer-XL `_rel_shift`: pad a zero column on the left of x [..., Q, K], view as
    [..., K+1, Q], drop the first row, view back. Against a table in DESCENDING distance order
    (column c <-> distance K-1-c) out[..., i, j] is the score for distance i + K-Q - j (j <= i+K-Q)."""
    *lead, q, k = x.shape
    padded = torch.cat([x.new_zeros(*lead, q, 1), x], dim=-1)
    return padded.reshape(*lead, k + 1, q)[..., 1:, :].reshape(*lead, q, k)


def rel_shift_right(x: Tensor) -> Tensor:
    """Mirror shift (seed 004, right-to-left): pad a zero column on the right of x [..., T, T],
    view as [..., T+1, T], drop the last row. Against ASCENDING distances: out[i, j] = x[i, j-i], j >= i."""
    *lead, t, _ = x.shape
    padded = torch.cat([x, x.new_zeros(*lead, t, 1)], dim=-1)
    return padded.reshape(*lead, t + 1, t)[..., :t, :].reshape(*lead, t, t)


def relative_scores_shifted(q: Tensor, r_by_distance: Tensor, causal: bool) -> Tensor:
    """q [B, H, T, d] against r_by_distance [(H,) T, d] (row t = distance t) by the O(n) shifts:
    causal: out[i, j] = q_i·r[i-j] (0 for j > i); non-causal: q_i·r[|i-j|] (seed 004 bi-directional:
    left shift on the lower triangle with diagonal, right shift above)."""
    T = q.shape[-2]
    left = rel_shift(q @ r_by_distance.flip(-2).transpose(-1, -2))
    lower = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    if causal:
        return left.masked_fill(~lower, 0.0)
    right = rel_shift_right(q @ r_by_distance.transpose(-1, -2))
    return torch.where(lower, left, right)


def relative_scores_direct(q: Tensor, r_by_distance: Tensor, causal: bool) -> Tensor:
    """The O(n^2) gather that relative_scores_shifted must equal."""
    dist = distance_matrix(q.shape[-2]).to(q.device)
    per_distance = q @ r_by_distance.transpose(-1, -2)  # [B, H, T, D]
    index = (dist.clamp(min=0) if causal else dist.abs()).expand(*per_distance.shape[:-1], -1)
    out = per_distance.gather(-1, index)
    return out.masked_fill(dist < 0, 0.0) if causal else out


def t5_relative_position_bucket(rel: Tensor, bidirectional: bool, num_buckets: int,
                                max_distance: int) -> Tensor:
    """HF `T5Attention._relative_position_bucket` (rel = key - query), log branch in float32."""
    buckets = torch.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (rel > 0).long() * num_buckets
        n = rel.abs()
    else:
        n = (-rel).clamp(min=0)
    max_exact = num_buckets // 2
    large = max_exact + (torch.log(n.clamp(min=max_exact).float() / max_exact)
                         / math.log(max_distance / max_exact) * (num_buckets - max_exact)).long()
    large = large.clamp(max=num_buckets - 1)
    return buckets + torch.where(n < max_exact, n, large)


def rope_frequencies(theta: float, rotary_dim: int, scaling: Optional[Dict[str, Any]] = None,
                     n_ctx: int = 0, seq_len: int = 0) -> Tuple[Tensor, float]:
    """(inv_freq float64 [rotary_dim/2], attention factor) as HF modeling_rope_utils, with
    max_position_embeddings = n_ctx: default theta^(-2c/d); linear /factor; dynamic (NTK);
    yarn; llama3; longrope (see core/rope_scaling.h for the formulas)."""
    d = rotary_dim
    base = lambda b: b ** (-2.0 * torch.arange(d // 2, dtype=torch.float64) / d)  # noqa: E731
    s = scaling or {}
    kind = s.get("rope_type", s.get("type", "default"))
    factor = float(s.get("factor", 1.0))
    if kind == "default":
        return base(theta), 1.0
    if kind == "linear":
        return base(theta) / factor, 1.0
    if kind == "dynamic":
        length = max(seq_len, n_ctx)
        return base(theta * (factor * length / n_ctx - (factor - 1)) ** (d / (d - 2))), 1.0
    orig = int(s.get("original_max_position_embeddings") or 0)
    if kind == "llama3":
        lo, hi = float(s.get("low_freq_factor", 1.0)), float(s.get("high_freq_factor", 4.0))
        inv = base(theta)
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > orig / lo, inv / factor, inv)
        smooth = (orig / wavelen - lo) / (hi - lo)
        medium = (wavelen >= orig / hi) & (wavelen <= orig / lo)
        return torch.where(medium, (1 - smooth) * scaled / factor + smooth * scaled, scaled), 1.0
    l0 = orig if orig > 0 else n_ctx
    if orig > 0:
        factor = n_ctx / orig  # HF: factor is implied by the two lengths
    if kind == "yarn":
        def mscale(x, m=1.0):
            return 1.0 if x <= 1 else 0.1 * m * math.log(x) + 1.0
        attn = s.get("attention_factor")
        if attn is None:
            m, m_all = s.get("mscale"), s.get("mscale_all_dim")
            attn = mscale(factor, m) / mscale(factor, m_all) if m and m_all else mscale(factor)
        dim_of = lambda rot: d * math.log(l0 / (rot * 2 * math.pi)) / (2 * math.log(theta))  # noqa
        low, high = dim_of(float(s.get("beta_fast", 32.0))), dim_of(float(s.get("beta_slow", 1.0)))
        if s.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, d - 1)
        if low == high:
            high += 0.001
        ramp = ((torch.arange(d // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
        extrapolation = 1 - ramp
        inv = base(theta)
        return inv / factor * (1 - extrapolation) + inv * extrapolation, float(attn)
    if kind == "longrope":
        attn = s.get("attention_factor")
        if attn is None:
            attn = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(l0))
        ext = s["long_factor"] if seq_len > l0 else s["short_factor"]
        return base(theta) / torch.tensor(ext, dtype=torch.float64), float(attn)
    raise ValueError(f"rope_scaling: unknown type {kind!r}")


def apply_rotation(x: Tensor, positions: Tensor, inv_freq: Tensor, pairing: str,
                   attention_factor: float = 1.0) -> Tensor:
    """Rotates the first 2·len(inv_freq) dims of x [B, T, h, d] pairwise by m·inv_freq[c]
    (angles float64, cos/sin float32 times attention_factor); the other dims pass through.
    half_split pairs (c, c + r/2) (HF rotate_half), interleaved pairs (2c, 2c+1) (GPT-J/Meta)."""
    half = inv_freq.shape[0]
    angle = positions.double()[:, None] * inv_freq[None, :]
    cos = (angle.cos() * attention_factor).float()[None, :, None, :]
    sin = (angle.sin() * attention_factor).float()[None, :, None, :]
    rot, rest = x[..., : 2 * half], x[..., 2 * half:]
    if pairing == "interleaved":
        a, b = rot[..., 0::2], rot[..., 1::2]
    else:
        a, b = rot[..., :half], rot[..., half:]
    out_a, out_b = a * cos - b * sin, a * sin + b * cos
    if pairing == "interleaved":
        rotated = torch.stack([out_a, out_b], dim=-1).flatten(-2)
    else:
        rotated = torch.cat([out_a, out_b], dim=-1)
    return torch.cat([rotated, rest], dim=-1)


def hope_kept_components(base: float, d: int, L: int) -> int:
    """Number of components c (0..d/2-1) with theta_c = base^(-2c/d) >= 2·pi/L."""
    return sum(1 for c in range(d // 2) if base ** (-2.0 * c / d) >= 2 * math.pi / L)


def cope_positions(gate_logits: Tensor, q: Tensor, pos_emb: Optional[Tensor], npos_max: int,
                   allowed: Tensor, scale: float, logit_scale: str = "divide_all"
                   ) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
    """CoPE (seed 001 eq. 3-8). gate_logits [B, H, Q, K] raw, q [B, H, Q, d], pos_emb [d, npos_max]
    (None: positions only), allowed [Q, K] bool. Returns (g, p, z): g = sigmoid(logit·scale), 0 where
    masked; p = min(sum_{t>=j} g_it, npos_max - 1) (flip-cumsum-flip); z = q·e[p] interpolated
    linearly between floor(p) and ceil(p), times scale for divide_all, 0 where masked."""
    g = torch.sigmoid(gate_logits * scale).masked_fill(~allowed, 0.0)
    p = g.flip(-1).cumsum(-1).flip(-1).clamp(max=npos_max - 1)
    if pos_emb is None:
        return g, p, None
    z_int = q @ pos_emb  # [B, H, Q, npos_max]: z_i[p] at integer p
    floor = p.floor()
    w = p - floor
    z = z_int.gather(-1, p.ceil().long()) * w + z_int.gather(-1, floor.long()) * (1 - w)
    if logit_scale == "divide_all":
        z = z * scale
    return g, p, z.masked_fill(~allowed, 0.0)


# ----------------------------------------------------------------------------------------------
# Position-encoding components. Their weights live directly under `pe.` / `blocks.L.attn.pe.`
# (see PEContainer), so the attribute names below are the tensor names of the format.
# ----------------------------------------------------------------------------------------------
@dataclasses.dataclass
class AttnInputs:
    """What an attention-side component sees. q, k, v: [B, H, T, d] (q, k rotated; k, v repeated
    to H heads under GQA); x: the normed block input [B, T, D]; allowed: [T, T] bool."""
    q: Tensor
    k: Tensor
    v: Tensor
    x: Tensor
    allowed: Tensor
    scale: float
    causal: bool
    positions: Tensor


class Component(nn.Module):
    """Base: `kind` is "absolute" (embed), "rotary" (rotate) or "attention" (scores/...)."""
    kind = "attention"

    def embed(self, emb: Tensor, positions: Tensor) -> Tuple[Tensor, Dict[str, Tensor]]:
        raise NotImplementedError

    def rotate(self, x: Tensor, positions: Tensor) -> Tensor:
        raise NotImplementedError

    def scores(self, a: AttnInputs) -> Tuple[Optional[Tensor], Dict[str, Tensor]]:
        """(position-only term on the score scale [B or 1, H, T, T] or None, extra captures)."""
        return None, {}

    def content(self, a: AttnInputs) -> Optional[Tensor]:
        """Extra content (not position) term of the logits, [B, H, T, T] (Transformer-XL u·k)."""
        return None

    def value_term(self, pattern: Tensor, a: AttnInputs) -> Optional[Tensor]:
        """Extra term of hook_z, [B, H, T, d] (Shaw's value table)."""
        return None


def _require_causal(kind: str, cfg: "PosLensConfig") -> None:
    if not cfg.causal:
        raise ValueError(f"position_encoding {kind}: supported for causal models only")


class NoPE(Component):
    """type "none": no position information."""
    kind = "none"

    def __init__(self, spec, cfg):
        super().__init__()


class LearnedAbsolute(Component):
    """x_j += P[j]; pos_embed [n_ctx, D]."""
    kind = "absolute"

    def __init__(self, spec, cfg):
        super().__init__()
        self.pos_embed = nn.Parameter(torch.randn(cfg.n_ctx, cfg.d_model) * 0.02)

    def embed(self, emb, positions):
        if positions.numel() > self.pos_embed.shape[0]:
            raise ValueError(f"learned_absolute: {positions.numel()} tokens > n_ctx")
        return self.pos_embed[positions][None], {}


class Sinusoidal(Component):
    """x_j += P[j], P[j, 2k] = sin(j·w_k), P[j, 2k+1] = cos(j·w_k), w_k = 10000^(-2k/D)."""
    kind = "absolute"

    def __init__(self, spec, cfg):
        super().__init__()
        self.d_model = cfg.d_model

    def embed(self, emb, positions):
        return sinusoidal_embedding(positions, self.d_model).to(emb.device)[None], {}


class Heinsen(Component):
    """Exponentiated states (seed 002): on the token embeddings x, log p = logsigmoid(W_p x + b_p),
    h = W_h x + b_h, s by heinsen_scan (s_0 = 0), x += W_R s + b_R. hook_pe_state = s [B, T, d_pe]."""
    kind = "absolute"

    def __init__(self, spec, cfg):
        super().__init__()
        d_pe = spec["d_pe"]
        self.heinsen_p = nn.Linear(cfg.d_model, d_pe)
        self.heinsen_h = nn.Linear(cfg.d_model, d_pe)
        self.heinsen_r = nn.Linear(d_pe, cfg.d_model)

    def embed(self, emb, positions):
        s = heinsen_scan(F.logsigmoid(self.heinsen_p(emb)), self.heinsen_h(emb))
        return self.heinsen_r(s), {"hook_pe_state": s}


class RoPE(Component):
    """Rotary on the first rotary_dim dims, pairing half_split | interleaved, HF rope_scaling."""
    kind = "rotary"

    def __init__(self, spec, cfg):
        super().__init__()
        self.theta, self.pairing, self.n_ctx = float(spec["rope_theta"]), spec["pairing"], cfg.n_ctx
        self.rotary_dim = spec["rotary_dim"] or cfg.head_dim
        self.scaling = spec["rope_scaling"]
        if self.rotary_dim % 2 or not 2 <= self.rotary_dim <= cfg.head_dim:
            raise ValueError("rope: rotary_dim must be even and in [2, d_head]")

    def rotate(self, x, positions):
        inv_freq, attn = rope_frequencies(self.theta, self.rotary_dim, self.scaling, self.n_ctx,
                                          positions.numel())
        return apply_rotation(x, positions, inv_freq.to(x.device), self.pairing, attn)


class HoPE(Component):
    """RoPE whose components with theta_c < 2·pi/L are not rotated (seed 003 §5.1)."""
    kind = "rotary"

    def __init__(self, spec, cfg):
        super().__init__()
        self.theta, self.pairing, self.d = float(spec["rope_theta"]), spec["pairing"], cfg.head_dim
        self.L = spec["L"] or cfg.n_ctx

    def rotate(self, x, positions):
        inv_freq = self.theta ** (-2.0 * torch.arange(self.d // 2, dtype=torch.float64) / self.d)
        inv_freq[hope_kept_components(self.theta, self.d, self.L):] = 0.0  # angle 0 = identity
        return apply_rotation(x, positions, inv_freq.to(x.device), self.pairing)


class ALiBi(Component):
    """-m_h·(i - j), standard slopes; no scale. Non-causal: -m_h·|i - j|."""

    def __init__(self, spec, cfg):
        super().__init__()
        self.slopes = alibi_slopes(cfg.n_heads)

    def scores(self, a):
        dist = distance_matrix(a.q.shape[2]).double()
        dist = dist.clamp(min=0) if a.causal else dist.abs()
        m = torch.tensor(self.slopes, dtype=torch.float64)[:, None, None]
        return (-m * dist).float()[None].to(a.q.device), {}


class Shaw(Component):
    """Shaw et al.: attn_scale·q_i·e[clip(i-j, 0, k)]; optional value term Σ_j a_ij ev[clip(i-j, 0, k)].
    shaw_key [k+1, dh], shaw_value [k+1, dh] (shared by heads)."""

    def __init__(self, spec, cfg):
        super().__init__()
        _require_causal("shaw", cfg)
        k, dh = spec["max_distance"], cfg.head_dim
        self.shaw_key = nn.Parameter(torch.randn(k + 1, dh) * 0.02)
        if spec["values"]:
            self.shaw_value = nn.Parameter(torch.randn(k + 1, dh) * 0.02)

    def _index(self, a):
        return distance_matrix(a.q.shape[2]).clamp(0, self.shaw_key.shape[0] - 1).to(a.q.device)

    def scores(self, a):
        z = a.q @ self.shaw_key.t()  # [B, H, T, k+1]
        return z.gather(-1, self._index(a).expand(*z.shape[:-1], -1)) * a.scale, {}

    def value_term(self, pattern, a):
        if not hasattr(self, "shaw_value"):
            return None
        index = self._index(a).expand_as(pattern)
        per_bucket = pattern.new_zeros(*pattern.shape[:-1], self.shaw_value.shape[0])
        return per_bucket.scatter_add(-1, index, pattern) @ self.shaw_value


class T5(Component):
    """table[bucket(j - i), h], HF buckets (bidirectional when not causal), no scale. t5_bias [nb, H]."""

    def __init__(self, spec, cfg):
        super().__init__()
        self.num_buckets, self.max_distance = spec["num_buckets"], spec["max_distance"]
        self.t5_bias = nn.Parameter(torch.randn(self.num_buckets, cfg.n_heads) * 0.02)

    def scores(self, a):
        rel = -distance_matrix(a.q.shape[2])  # key - query
        bucket = t5_relative_position_bucket(rel, not a.causal, self.num_buckets, self.max_distance)
        return self.t5_bias[bucket.to(a.q.device)].permute(2, 0, 1)[None], {}


class TransformerXL(Component):
    """attn_scale·((q+u)·k + (q+v)·W_R R_{i-j}); R = [sin | cos] over D (non-causal: R_{|i-j|}).
    The u·k part is content (hook_pos_scores holds only the v/R term). txl_r_proj [H·dh, D] no
    bias, txl_u, txl_v [H, dh]. Computed with the reference's rel-shift."""

    def __init__(self, spec, cfg):
        super().__init__()
        self.H, self.dh = cfg.n_heads, cfg.head_dim
        self.txl_r_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.head_dim, bias=False)
        self.txl_u = nn.Parameter(torch.randn(cfg.n_heads, cfg.head_dim) * 0.02)
        self.txl_v = nn.Parameter(torch.randn(cfg.n_heads, cfg.head_dim) * 0.02)

    def content(self, a):
        return (self.txl_u[None, :, None, :] @ a.k.transpose(-1, -2)) * a.scale  # [B, H, 1, T]

    def scores(self, a):
        T = a.q.shape[2]
        R = sinusoidal_embedding(torch.arange(T), self.txl_r_proj.in_features, interleaved=False)
        r = self.txl_r_proj(R.to(a.q.device)).view(T, self.H, self.dh).transpose(0, 1)  # [H, T, dh]
        qv = a.q + self.txl_v[None, :, None, :]
        return relative_scores_shifted(qv, r, a.causal) * a.scale, {}


class KERPLE(Component):
    """log: -p·log(1 + a·(i-j)); power: -a·(i-j)^p; p, a clamped >= 1e-2; float64 math.
    Non-causal: |i - j|."""

    def __init__(self, spec, cfg):
        super().__init__()
        self.variant = spec["variant"]
        self.kerple_p = nn.Parameter(torch.rand(cfg.n_heads) * 2)
        self.kerple_a = nn.Parameter(torch.rand(cfg.n_heads))

    def scores(self, a):
        dist = distance_matrix(a.q.shape[2]).double().to(a.q.device)[None]
        dist = dist.clamp(min=0) if a.causal else dist.abs()
        p = self.kerple_p.double().clamp(min=1e-2)[:, None, None]
        aa = self.kerple_a.double().clamp(min=1e-2)[:, None, None]
        bias = -p * torch.log1p(aa * dist) if self.variant == "log" else -aa * dist.pow(p)
        return bias.float()[None], {}


class FIRE(Component):
    """f(psi(i-j) / (psi(max(|L_thr|, i)) + 1e-6)), psi(t) = log(|c|·t + 1), f = MLP 1->hidden->H
    with ReLU; 0 for keys after the query. x in float64, MLP in float32."""

    def __init__(self, spec, cfg):
        super().__init__()
        _require_causal("fire", cfg)
        self.fire_mlp1 = nn.Linear(1, spec["hidden"])
        self.fire_mlp2 = nn.Linear(spec["hidden"], cfg.n_heads)
        self.fire_c = nn.Parameter(torch.tensor([0.1]))
        self.fire_l_thr = nn.Parameter(torch.tensor([512.0]))

    def scores(self, a):
        T = a.q.shape[2]
        c, l_thr = self.fire_c.double().abs(), self.fire_l_thr.double().abs()
        dist = distance_matrix(T).double().to(a.q.device)
        i = torch.arange(T, dtype=torch.float64, device=a.q.device)[:, None]
        x = torch.log1p(c * dist.clamp(min=0)) / (torch.log1p(c * torch.maximum(i, l_thr)) + 1e-6)
        bias = self.fire_mlp2(F.relu(self.fire_mlp1(x.float()[..., None])))  # [T, T, H]
        return bias.masked_fill((dist < 0)[..., None], 0.0).permute(2, 0, 1)[None], {}


class CoPE(Component):
    """Contextual position encoding (seed 001). cope_pos_emb [dh, npos_max] (position "embedding"),
    cope_gate_proj [H·dh, D] (gates "sep_keys"), cope_slopes [H] (position "alibi"; when absent
    -m_h of ALiBi). Captures hook_cope_gates / hook_cope_pos."""

    def __init__(self, spec, cfg, learned_slopes: bool = True):
        super().__init__()
        self.npos_max, self.gates, self.logit_scale = spec["npos_max"], spec["gates"], spec["logit_scale"]
        self.position, self.H, self.dh = spec["position"], cfg.n_heads, cfg.head_dim
        if self.position == "embedding":
            self.cope_pos_emb = nn.Parameter(torch.zeros(cfg.head_dim, self.npos_max))
        if self.gates == "sep_keys":
            self.cope_gate_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.head_dim, bias=False)
        if self.position == "alibi" and learned_slopes:
            self.cope_slopes = nn.Parameter(-torch.tensor(alibi_slopes(cfg.n_heads)))

    def scores(self, a):
        if self.gates == "keys":
            gate_keys = a.k
        elif self.gates == "values":
            gate_keys = a.v
        else:  # sep_keys: W_g h_j, H heads (not GQA-grouped, not rotated)
            B, T, _ = a.x.shape
            gate_keys = self.cope_gate_proj(a.x).view(B, T, self.H, self.dh)
            gate_keys = gate_keys.transpose(1, 2)  # not rotated
        pos_emb = self.cope_pos_emb if self.position == "embedding" else None
        g, p, z = cope_positions(a.q @ gate_keys.transpose(-1, -2), a.q, pos_emb, self.npos_max,
                                 a.allowed, a.scale, self.logit_scale)
        if self.position == "alibi":  # + slope_h · p_ij (seed 001 eq. 10), no scale
            slopes = getattr(self, "cope_slopes", None)
            if slopes is None:
                slopes = -torch.tensor(alibi_slopes(self.H), device=p.device)
            z = p * slopes.view(1, -1, 1, 1)
        return z, {"hook_cope_gates": g, "hook_cope_pos": p}


COMPONENTS = {"none": NoPE, "learned_absolute": LearnedAbsolute, "sinusoidal": Sinusoidal,
              "heinsen": Heinsen, "rope": RoPE, "hope": HoPE, "alibi": ALiBi, "shaw": Shaw, "t5": T5,
              "transformer_xl": TransformerXL, "kerple": KERPLE, "fire": FIRE, "cope": CoPE}


class PEContainer(nn.Module):
    """Holds components and registers their weights (parameters and submodules) directly on
    itself, so a component's `shaw_key` is stored as `pe.shaw_key`, not `pe.<component>.shaw_key`."""

    def __init__(self, components: List[Component]):
        super().__init__()
        self.components = list(components)  # a plain list: not a registered child
        for c in self.components:
            for name, p in c.named_parameters(recurse=False):
                self.register_parameter(name, p)
            for name, m in c.named_children():
                self.add_module(name, m)


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
    predicate on names; names as SPEC.md §1). `cope_slopes=False` builds CoPE-ALiBi without a
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
