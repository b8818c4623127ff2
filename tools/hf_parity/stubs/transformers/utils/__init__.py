"""Stand-in for transformers.utils, written for tools/make_arch_reference.py (not taken from transformers):
the names configuration_utils.py, modeling_outputs.py and the BLOOM / MPT / T5 / BERT / RoBERTa files import.
Only ModelOutput takes part in a forward pass; docstring decorators leave functions unchanged, and the hub /
file-resolution helpers (used by from_pretrained / save_pretrained of a config, never called) refuse."""
from dataclasses import fields

import torch

from . import logging  # noqa: F401

CONFIG_NAME = "config.json"
DUMMY_INPUTS = DUMMY_MASK = None  # only read by T5PreTrainedModel.dummy_inputs, never called here


def is_torch_available():
    return True


def get_torch_version():
    return torch.__version__


def is_torch_fx_proxy(x):
    return False  # nothing is traced here


def _keep_function(*args, **kwargs):
    return lambda fn: fn


add_start_docstrings = add_start_docstrings_to_model_forward = _keep_function
add_code_sample_docstrings = replace_return_docstrings = _keep_function


def copy_func(f):
    """configuration_utils copies push_to_hub to reformat its docstring; this one has none, so f itself
    serves."""
    return f


def _unavailable(*args, **kwargs):
    raise NotImplementedError("no hub or file resolution in tools/hf_parity")


cached_file = download_url = extract_commit_hash = is_remote_url = _unavailable
add_model_info_to_auto_map = add_model_info_to_custom_pipelines = _unavailable


class PushToHubMixin:
    """Base class of PretrainedConfig; pushing is not available."""

    push_to_hub = _unavailable


class ModelOutput:
    """Base of the output dataclasses (modeling_outputs.py): fields are read as attributes or by name,
    and an integer index or slice counts only the fields that are not None, in declaration order (what
    the modeling files rely on when they write outputs[0] or outputs[1:])."""

    def to_tuple(self):
        return tuple(v for v in (getattr(self, f.name) for f in fields(self)) if v is not None)

    def __getitem__(self, key):
        return getattr(self, key) if isinstance(key, str) else self.to_tuple()[key]
