"""The position-encoding formulas of docs/formulas.md §2 as plain PyTorch functions, used by the
components in tools/poslens_pe_components.py (numerical conventions: core/position/<method>.h)."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

import torch

Tensor = torch.Tensor

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
    """Mirror shift (Kernes 2021, right-to-left): pad a zero column on the right of x [..., T, T],
    view as [..., T+1, T], drop the last row. Against ASCENDING distances: out[i, j] = x[i, j-i], j >= i."""
    *lead, t, _ = x.shape
    padded = torch.cat([x, x.new_zeros(*lead, t, 1)], dim=-1)
    return padded.reshape(*lead, t + 1, t)[..., :t, :].reshape(*lead, t, t)


def relative_scores_shifted(q: Tensor, r_by_distance: Tensor, causal: bool) -> Tensor:
    """q [B, H, T, d] against r_by_distance [(H,) T, d] (row t = distance t) by the O(n) shifts:
    causal: out[i, j] = q_i·r[i-j] (0 for j > i); non-causal: q_i·r[|i-j|] (Kernes 2021 bi-directional:
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
    """CoPE (Golovneva et al. 2024 eq. 3-8). gate_logits [B, H, Q, K] raw, q [B, H, Q, d], pos_emb [d, npos_max]
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
