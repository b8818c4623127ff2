"""One PyTorch module per position-encoding component of the PosLens format
(docs/poslens-format.md), as tools/poslens_reference.py composes them."""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from poslens_pe_kernels import *  # noqa: F401,F403  (the formulas)

Tensor = torch.Tensor

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
    """Exponentiated states (Heinsen 2024): on the token embeddings x, log p = logsigmoid(W_p x + b_p),
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
    """RoPE whose components with theta_c < 2·pi/L are not rotated (Chen et al. 2024 §5.1)."""
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
    """Contextual position encoding (Golovneva et al. 2024). cope_pos_emb [dh, npos_max] (position "embedding"),
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
        if self.position == "alibi":  # + slope_h · p_ij (Golovneva et al. 2024 eq. 10), no scale
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
