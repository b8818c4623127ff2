#!/usr/bin/python3
"""Hand-checked properties of tools/poslens_reference.py.

    /usr/bin/python3 tools/test_poslens_reference.py
    /usr/bin/python3 -m unittest tools/test_poslens_reference.py
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import poslens_reference as R  # noqa: E402
import poslens_test_models as M  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "poslens_reference.py")


def tiny(**overrides):
    return R.PosLensConfig(**{**M.BASE, **overrides})


def random_model(config, seed=0, **kw):
    model = R.PosLensModel(config, **kw).eval()
    M.randomize_(model, torch.Generator().manual_seed(seed))
    return model


class Kernels(unittest.TestCase):
    def test_alibi_slopes(self):
        self.assertEqual(R.alibi_slopes(8), [2.0 ** -(h + 1) for h in range(8)])
        self.assertEqual(R.alibi_slopes(12), [2.0 ** -(h + 1) for h in range(8)] +
                         [2 ** -0.5, 2 ** -1.5, 2 ** -2.5, 2 ** -3.5])
        self.assertEqual(R.alibi_slopes(6), [2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8, 2.0 ** -1, 2.0 ** -3])

    def test_cope_all_gates_one_gives_token_distance_plus_one(self):
        T, d = 6, 4
        allowed = torch.ones(T, T, dtype=torch.bool).tril()
        q = torch.randn(1, 2, T, d)
        g, p, z = R.cope_positions(torch.full((1, 2, T, T), 1e4), q, torch.randn(d, 16), 16, allowed, 0.5)
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        expected = torch.where(j <= i, (i - j + 1).float(), torch.zeros(()))
        self.assertTrue(torch.equal(p[0, 0], expected))
        self.assertTrue(torch.equal(g[0, 1], allowed.float()))
        self.assertTrue(torch.equal(z[0, 0][~allowed], torch.zeros(int((~allowed).sum()))))
        # clamping to npos_max - 1
        _, p, _ = R.cope_positions(torch.full((1, 2, T, T), 1e4), q, None, 3, allowed, 0.5)
        self.assertEqual(p.max().item(), 2.0)

    def test_cope_interpolation(self):
        # Two keys, gates sigmoid(0) = 0.5: p_10 = 1.0, p_11 = 0.5; z interpolates e[0], e[1].
        q, e = torch.tensor([[[[0.0], [1.0]]]]), torch.tensor([[2.0, 6.0, 10.0]])
        allowed = torch.ones(2, 2, dtype=torch.bool).tril()
        g, p, z = R.cope_positions(torch.zeros(1, 1, 2, 2), q, e, 3, allowed, 1.0, "no_div")
        self.assertTrue(torch.allclose(p[0, 0, 1], torch.tensor([1.0, 0.5])))
        self.assertTrue(torch.allclose(z[0, 0, 1], torch.tensor([6.0, 4.0])))
        _, _, z2 = R.cope_positions(torch.zeros(1, 1, 2, 2), q, e, 3, allowed, 0.25, "divide_all")
        self.assertTrue(torch.allclose(z2[0, 0, 1], torch.tensor([6.0, 4.0]) * 0.25))

    def test_heinsen_scan_equals_recurrence(self):
        g = torch.Generator().manual_seed(1)
        log_p = torch.nn.functional.logsigmoid(torch.randn(2, 200, 5, generator=g) * 2)
        h = torch.randn(2, 200, 5, generator=g) * 3
        s = R.heinsen_scan(log_p, h)
        self.assertLess((s - R.heinsen_sequential(log_p, h)).abs().max().item(), 1e-5)
        # s_0 = 0 is a log-state: s_1 = logsumexp(log p_1, h_1), not h_1.
        self.assertTrue(torch.allclose(s[:, 0], torch.logaddexp(log_p[:, 0], h[:, 0])))

    def test_transformer_xl_rel_shift_equals_gather(self):
        g = torch.Generator().manual_seed(2)
        q = torch.randn(2, 3, 7, 4, generator=g, dtype=torch.float64)
        for r in (torch.randn(7, 4, generator=g, dtype=torch.float64),
                  torch.randn(3, 7, 4, generator=g, dtype=torch.float64)):
            for causal in (True, False):
                shifted = R.relative_scores_shifted(q, r, causal)
                self.assertLess((shifted - R.relative_scores_direct(q, r, causal)).abs().max().item(), 1e-12)
            # by hand, one entry each way
            rr = r if r.dim() == 3 else r.expand(3, 7, 4)
            self.assertAlmostEqual(R.relative_scores_shifted(q, r, True)[1, 2, 5, 1].item(),
                                   (q[1, 2, 5] @ rr[2, 4]).item(), places=12)
            self.assertAlmostEqual(R.relative_scores_shifted(q, r, False)[1, 2, 1, 5].item(),
                                   (q[1, 2, 1] @ rr[2, 4]).item(), places=12)
            self.assertEqual(R.relative_scores_shifted(q, r, True)[0, 0, 1, 5].item(), 0.0)

    def test_t5_buckets_by_hand(self):
        rel = -torch.arange(12)  # key - query for keys in the past
        causal = R.t5_relative_position_bucket(rel, False, 8, 10)
        self.assertEqual(causal.tolist(), [0, 1, 2, 3, 4, 4, 5, 6, 7, 7, 7, 7])
        self.assertEqual(R.t5_relative_position_bucket(torch.tensor([3]), False, 8, 10).item(), 0)
        both = R.t5_relative_position_bucket(torch.tensor([-1, 0, 1, 2, -3]), True, 8, 10)
        self.assertEqual(both.tolist(), [1, 0, 5, 6, 2])

    def test_hope_kept_components(self):
        self.assertEqual(R.hope_kept_components(1e4, 64, 512), 16)

    def test_sinusoidal_vaswani(self):
        P = R.sinusoidal_embedding(torch.arange(5), 8)
        self.assertAlmostEqual(P[3, 2].item(), math.sin(3 / 10000 ** (2 / 8)), places=6)
        self.assertAlmostEqual(P[3, 3].item(), math.cos(3 / 10000 ** (2 / 8)), places=6)
        Q = R.sinusoidal_embedding(torch.arange(5), 8, interleaved=False)
        self.assertAlmostEqual(Q[3, 5].item(), math.cos(3 / 10000 ** (2 / 8)), places=6)

    def test_rope_depends_on_relative_position_only(self):
        g = torch.Generator().manual_seed(3)
        q, k = torch.randn(1, 1, 1, 8, generator=g), torch.randn(1, 1, 1, 8, generator=g)
        inv, _ = R.rope_frequencies(10000.0, 6)
        for pairing in ("half_split", "interleaved"):
            def dot(m, n):
                rq = R.apply_rotation(q, torch.tensor([m]), inv, pairing)
                rk = R.apply_rotation(k, torch.tensor([n]), inv, pairing)
                return (rq * rk).sum().item()
            self.assertAlmostEqual(dot(7, 3), dot(4, 0), places=4)
            self.assertAlmostEqual(dot(0, 0), (q * k).sum().item(), places=5)
            rotated = R.apply_rotation(q, torch.tensor([5]), inv, pairing)
            self.assertTrue(torch.equal(rotated[..., 6:], q[..., 6:]))  # partial rotary
        # interleaved pair (0, 1) rotates like half-split pair (0, 3) with r = 6
        x = torch.zeros(1, 1, 1, 8)
        x[..., 0], x[..., 1] = 1.0, 2.0
        y = torch.zeros(1, 1, 1, 8)
        y[..., 0], y[..., 3] = 1.0, 2.0
        a = R.apply_rotation(x, torch.tensor([2]), inv, "interleaved")
        b = R.apply_rotation(y, torch.tensor([2]), inv, "half_split")
        self.assertAlmostEqual(a[..., 1].item(), b[..., 3].item(), places=6)

    def test_rope_scaling_linear_and_yarn(self):
        base, _ = R.rope_frequencies(10000.0, 8)
        lin, f = R.rope_frequencies(10000.0, 8, {"type": "linear", "factor": 4.0})
        self.assertTrue(torch.allclose(lin, base / 4) and f == 1.0)
        _, attn = R.rope_frequencies(10000.0, 16, {"rope_type": "yarn", "factor": 4.0}, n_ctx=64)
        self.assertAlmostEqual(attn, 0.1 * math.log(4) + 1)

    def test_kerple_clamps_and_fire_by_hand(self):
        config = tiny(position_encoding=[{"type": "kerple"}, {"type": "fire", "hidden": 2}])
        model = R.PosLensModel(config)
        kerple, fire = model.blocks[0].attn.terms
        with torch.no_grad():
            kerple.kerple_p.copy_(torch.tensor([-1.0, 1.0, 2.0, 0.5]))
            kerple.kerple_a.copy_(torch.tensor([1.0, 0.0, 1.0, 1.0]))
            fire.fire_c.fill_(-0.5)
            fire.fire_l_thr.fill_(-2.0)
        a = R.AttnInputs(torch.zeros(1, 4, 5, 8), None, None, None, None, 1.0, True, None)
        bias = kerple.scores(a)[0][0]
        self.assertAlmostEqual(bias[0, 3, 1].item(), -1e-2 * math.log(1 + 2), places=6)
        self.assertAlmostEqual(bias[1, 3, 1].item(), -1.0 * math.log(1 + 1e-2 * 2), places=6)
        fb = fire.scores(a)[0][0]
        x = math.log(1 + 0.5 * 2) / (math.log(1 + 0.5 * max(2.0, 4)) + 1e-6)
        h = torch.relu(fire.fire_mlp1.weight[:, 0] * x + fire.fire_mlp1.bias)
        self.assertAlmostEqual(fb[1, 4, 2].item(), (fire.fire_mlp2.weight[1] @ h + fire.fire_mlp2.bias[1]).item(), places=5)
        self.assertEqual(fb[1, 2, 4].item(), 0.0)  # future key

    def test_safetensors_round_trip(self):
        tensors = {"a": torch.randn(3, 4), "b": torch.arange(5), "c": torch.randn(2, 2).bfloat16(),
                   "d": torch.tensor(1.5, dtype=torch.float16), "e": torch.tensor([True, False])}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "x.safetensors")
            R.save_safetensors(tensors, path, {"k": "v"})
            with open(path, "rb") as f:
                n = int.from_bytes(f.read(8), "little")
            self.assertEqual(n % 8, 0)
            back, meta = R.load_safetensors(path)
        self.assertEqual(meta, {"k": "v"})
        for k, v in tensors.items():
            self.assertEqual(back[k].dtype, v.dtype)
            self.assertTrue(torch.equal(back[k], v), k)


class Model(unittest.TestCase):
    CONFIGS = {
        "everything": dict(n_kv_heads=2, qkv_bias=True, position_encoding=[
            {"type": "heinsen", "d_pe": 4}, {"type": "rope", "rotary_dim": 4},
            {"type": "cope", "npos_max": 5, "gates": "sep_keys"}, {"type": "t5", "num_buckets": 8, "max_distance": 10},
            {"type": "shaw", "max_distance": 3, "values": True, "shared": True},
            {"type": "fire", "hidden": 4}, {"type": "kerple", "variant": "power"}, {"type": "alibi"},
            {"type": "transformer_xl"}]),
        "tied_layernorm": dict(norm="layernorm", mlp="plain", activation="gelu_tanh", mlp_bias=True,
                               attn_out_bias=True, tie_word_embeddings=True,
                               position_encoding={"type": "learned_absolute"}),
        "hope_cope_alibi": dict(causal=False, position_encoding=[{"type": "hope"},
                                                                 {"type": "cope", "npos_max": 4, "position": "alibi"}]),
    }

    def test_state_dict_names(self):
        names = set(random_model(tiny(**self.CONFIGS["everything"])).state_dict())
        pe = {n for n in names if "pe." in n}
        expected = {f"pe.heinsen_{x}.{y}" for x in "phr" for y in ("weight", "bias")} | {"pe.t5_bias", "pe.shaw_key", "pe.shaw_value"}
        for layer in range(2):
            expected |= {f"blocks.{layer}.attn.pe.{n}" for n in (
                "cope_pos_emb", "cope_gate_proj.weight", "fire_mlp1.weight", "fire_mlp1.bias", "fire_mlp2.weight",
                "fire_mlp2.bias", "fire_c", "fire_l_thr", "kerple_p", "kerple_a", "txl_r_proj.weight", "txl_u", "txl_v")}
        self.assertEqual(pe, expected)
        self.assertIn("blocks.1.attn.k_proj.bias", names)
        self.assertEqual(tuple(random_model(tiny(**self.CONFIGS["everything"])).state_dict()
                               ["blocks.0.attn.k_proj.weight"].shape), (16, 32))
        tied = set(random_model(tiny(**self.CONFIGS["tied_layernorm"])).state_dict())
        self.assertNotIn("lm_head.weight", tied)
        self.assertIn("final_norm.bias", tied)
        self.assertIn("blocks.0.mlp.down_proj.bias", tied)
        self.assertNotIn("blocks.0.mlp.gate_proj.weight", tied)

    def test_save_load_round_trip(self):
        ids = torch.randint(0, 64, (2, 9))
        for name, overrides in self.CONFIGS.items():
            model = random_model(tiny(**overrides))
            with torch.no_grad():
                logits = model(ids)
            for weights in ("safetensors", "pt", "bin"):
                with tempfile.TemporaryDirectory() as tmp:
                    R.save_pretrained(model, tmp, weights)
                    back = R.load_pretrained(tmp).eval()
                    with torch.no_grad():
                        self.assertTrue(torch.equal(back(ids), logits), f"{name} {weights}")
                    self.assertEqual(back.config.to_dict(), model.config.to_dict())

    def test_every_weight_is_trained(self):
        model = random_model(tiny(**self.CONFIGS["everything"])).train()
        ids = torch.randint(0, 64, (2, 9))
        logits = model(ids)
        torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 64), ids[:, 1:].reshape(-1)).backward()
        self.assertEqual([n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum()], [])

    def test_unexpected_tensor_is_an_error(self):
        model = random_model(tiny(position_encoding=[{"type": "alibi"}]))
        with tempfile.TemporaryDirectory() as tmp:
            R.save_pretrained(model, tmp)
            state, _ = R.load_safetensors(os.path.join(tmp, "model.safetensors"))
            state["pe.shaw_kye"] = torch.zeros(2, 8)
            R.save_safetensors(state, os.path.join(tmp, "model.safetensors"))
            with self.assertRaisesRegex(ValueError, "unexpected tensors"):
                R.load_pretrained(tmp)

    def test_non_causal_alibi_is_symmetric_and_shaw_fire_are_causal_only(self):
        model = random_model(tiny(causal=False, position_encoding=[{"type": "alibi"}, {"type": "kerple"}]))
        with torch.no_grad():
            _, caps = model(torch.randint(0, 64, (1, 6)), capture=True)
        pos = caps["blocks.0.attn.hook_pos_scores"]
        self.assertTrue(torch.allclose(pos, pos.transpose(-1, -2)))
        self.assertFalse(torch.isinf(caps["blocks.0.attn.hook_attn_scores"]).any())
        for kind in ({"type": "shaw", "max_distance": 2}, {"type": "fire"}):
            with self.assertRaisesRegex(ValueError, "causal models only"):
                R.PosLensModel(tiny(causal=False, position_encoding=[kind]))

    def test_config_validation(self):
        for bad in ([{"type": "sinusoidal"}, {"type": "learned_absolute"}], [{"type": "cope"}],
                    [{"type": "rope", "pairing": "gptj"}], [{"type": "alibi"}, {"type": "alibi"}],
                    [{"type": "t5", "buckets": 8}], [{"type": "absolute"}]):
            with self.assertRaises(ValueError, msg=str(bad)):
                tiny(position_encoding=bad).validate()
        with self.assertRaises(ValueError):
            R.PosLensConfig.from_dict({"model_type": "llama", **M.BASE})
        with self.assertRaisesRegex(ValueError, "unknown keys"):
            R.PosLensConfig.from_dict({"model_type": "poslens", "rope_theta": 1e4, **M.BASE})
        ok = R.PosLensConfig.from_dict({"model_type": "poslens", "architectures": ["PosLens"], **M.BASE})
        self.assertEqual(ok.to_dict()["architectures"], ["PosLens"])

    def test_captures_masks_and_rows(self):
        model = random_model(tiny(**self.CONFIGS["everything"]))
        with torch.no_grad():
            _, caps = model(torch.randint(0, 64, (1, 7)), capture=True)
        upper = torch.ones(7, 7, dtype=torch.bool).triu(1)
        for layer in range(2):
            p = f"blocks.{layer}.attn."
            self.assertTrue(torch.allclose(caps[p + "hook_pattern"].sum(-1), torch.ones(1, 4, 7)))
            self.assertTrue(torch.isneginf(caps[p + "hook_attn_scores"][..., upper]).all())
            self.assertTrue((caps[p + "hook_pattern"][..., upper] == 0).all())
            self.assertTrue((caps[p + "hook_pos_scores"][..., upper] == 0).all())
            self.assertTrue((caps[p + "hook_cope_gates"][..., upper] == 0).all())
            self.assertEqual(tuple(caps[p + "hook_k"].shape), (1, 7, 2, 8))
            self.assertEqual(tuple(caps[p + "hook_rot_q"].shape), (1, 7, 4, 8))
        self.assertEqual(tuple(caps["hook_pe_state"].shape), (1, 7, 4))
        self.assertEqual(tuple(caps["hook_pos_embed"].shape), (1, 7, 32))  # Heinsen's W_R s + b_R
        # selective capture
        _, some = model(torch.randint(0, 64, (1, 7)), capture=["logits", "blocks.1.attn.hook_pattern"])
        self.assertEqual(set(some), {"logits", "blocks.1.attn.hook_pattern"})

    def test_scores_are_content_plus_position(self):
        model = random_model(tiny(position_encoding=[{"type": "alibi"}, {"type": "kerple"}]))
        with torch.no_grad():
            _, caps = model(torch.randint(0, 64, (1, 6)), capture=True)
        q = caps["blocks.0.attn.hook_q"].transpose(1, 2)
        k = caps["blocks.0.attn.hook_k"].transpose(1, 2)
        expect = q @ k.transpose(-1, -2) / math.sqrt(8) + caps["blocks.0.attn.hook_pos_scores"]
        lower = torch.ones(6, 6, dtype=torch.bool).tril()
        got = caps["blocks.0.attn.hook_attn_scores"]
        self.assertTrue(torch.allclose(got[..., lower], expect[..., lower], atol=1e-5))
        slopes = torch.tensor(R.alibi_slopes(4))
        kp = model.blocks[0].attn.pe.kerple_p.clamp(min=1e-2)
        ka = model.blocks[0].attn.pe.kerple_a.clamp(min=1e-2)
        by_hand = -slopes * 3 - kp * torch.log1p(ka * 3)
        self.assertTrue(torch.allclose(caps["blocks.0.attn.hook_pos_scores"][0, :, 4, 1], by_hand, atol=1e-5))


class TestModels(unittest.TestCase):
    def test_make_test_models(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run([sys.executable, SCRIPT, "make-test-models", tmp, "--seed", "3"],
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(out.returncode, 0, out.stderr)
            with open(os.path.join(tmp, "cases.json")) as f:
                cases = json.load(f)
            self.assertEqual(cases, list(M.TEST_CASES))
            for name in cases:
                folder = os.path.join(tmp, name)
                self.assertTrue(os.path.exists(os.path.join(folder, "model.pt" if name == "rope_pt"
                                                            else "model.safetensors")), name)
                ref, meta = R.load_safetensors(os.path.join(folder, "reference.safetensors"))
                self.assertEqual(meta["case"], name)
                ids = ref["input_ids"]
                self.assertEqual((ids.dtype, tuple(ids.shape)), (torch.int64, (1, M.SEQ_LEN)))
                model = R.load_pretrained(folder).eval()
                with torch.no_grad():
                    _, caps = model(ids, capture=True)
                self.assertEqual(set(caps) | {"input_ids"}, set(ref), name)
                for key, value in caps.items():
                    self.assertTrue(torch.equal(value.float(), ref[key]), f"{name} {key}")
                for layer in range(model.config.n_layers):
                    pattern = ref[f"blocks.{layer}.attn.hook_pattern"]
                    self.assertTrue(torch.allclose(pattern.sum(-1), torch.ones(pattern.shape[:-1])), name)
                    self.assertLess(pattern.max(-1).values[..., 3:].mean().item(), 0.95, name)  # not one-hot
                    self.assertGreater(pattern.max(-1).values[..., 3:].mean().item(), 0.4, name)  # not uniform


if __name__ == "__main__":
    unittest.main()
