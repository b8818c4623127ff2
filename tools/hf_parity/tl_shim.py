"""Runs TransformerLens's own nanoGPT weight conversion (transformer_lens/pretrained/weight_conversions/
nanogpt.py, saved verbatim under HF_SRC/transformer_lens/nanogpt.py) with the real einops (HF_SRC/einops_pkg).
Its only other import, HookedTransformerConfig, is used there as a type annotation: a placeholder module
stands in for it, and the config passed is a namespace of the fields the function reads."""
import importlib.util
import os
import sys
import types


def load_convert_nanogpt_weights(hf_src: str):
    conv = os.path.join(hf_src, "transformer_lens", "nanogpt.py")
    ein = os.path.join(hf_src, "einops_pkg")
    for p in (conv, os.path.join(ein, "einops", "__init__.py")):
        if not os.path.isfile(p):
            raise SystemExit(f"tl_shim: {p} is missing; see tests/data/models/README.md for how HF_SRC is made")
    if ein not in sys.path:
        sys.path.insert(0, ein)
    for name in ("transformer_lens", "transformer_lens.config"):
        if name not in sys.modules:
            m = types.ModuleType(name)
            m.__path__ = []
            sys.modules[name] = m
    cfg_mod = types.ModuleType("transformer_lens.config.hooked_transformer_config")

    class HookedTransformerConfig:  # placeholder: annotation only
        pass

    cfg_mod.HookedTransformerConfig = HookedTransformerConfig
    sys.modules["transformer_lens.config.hooked_transformer_config"] = cfg_mod
    spec = importlib.util.spec_from_file_location("tl_nanogpt_conversion", conv)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.convert_nanogpt_weights
