"""Builds an importable `transformers` package from transformers' own files saved under HF_SRC
(configuration_utils.py, modeling_outputs.py, activations.py, modeling_attn_mask_utils.py,
utils/model_parallel_utils.py, models/<family>/{configuration,modeling}_<family>.py, verbatim from
one upstream commit, see HF_SRC/transformers/SOURCE.txt) and the minimal stand-ins of our own in
tools/hf_parity/stubs/ (modeling_utils: PreTrainedModel's tying and masks, hf_state_dict_for_save; utils:
ModelOutput, loggers; pytorch_utils, onnx, file_utils and the rest: imported names only).
HF_SRC is outside the repository and never committed."""
import importlib
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
STUBS = os.path.join(HERE, "stubs", "transformers")
REQUIRED = [
    "configuration_utils.py", "modeling_outputs.py", "activations.py", "modeling_attn_mask_utils.py",
    "utils/model_parallel_utils.py",
] + [f"models/{m}/{k}_{m}.py" for m in ("bloom", "mpt", "t5", "bert", "roberta")
     for k in ("configuration", "modeling")]
TRANSFORMERS_VERSION = "4.42.0.dev0"  # setup.py's version at the commit the files come from


def load_transformers(hf_src: str):
    root = os.path.join(os.path.abspath(hf_src), "transformers")
    missing = [f for f in REQUIRED if not os.path.isfile(os.path.join(root, f))]
    if missing:
        raise SystemExit(f"hf_shim: {root} lacks transformers' source files {missing}; "
                         "see tests/data/models/README.md for how /work/hf_src is made")
    if "transformers" in sys.modules and getattr(sys.modules["transformers"], "_poslens_shim", False):
        return sys.modules["transformers"]
    if "transformers" in sys.modules:
        raise SystemExit("hf_shim: a real `transformers` is already imported")
    pkg = types.ModuleType("transformers")
    pkg.__path__ = [STUBS, root]  # stubs first, then the real files
    pkg.__version__ = TRANSFORMERS_VERSION
    pkg._poslens_shim = True
    pkg.__file__ = os.path.join(STUBS, "__init__.py")
    sys.modules["transformers"] = pkg
    utils = importlib.import_module("transformers.utils")
    utils.__path__.append(os.path.join(root, "utils"))
    return pkg


def source_note(hf_src: str) -> str:
    with open(os.path.join(hf_src, "transformers", "SOURCE.txt")) as f:
        return f.read()
