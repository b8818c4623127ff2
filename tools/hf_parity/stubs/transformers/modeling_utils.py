"""Stand-in for transformers.modeling_utils, written for tools/make_arch_reference.py (not taken from
transformers). It provides what the BLOOM, MPT, T5, BERT and RoBERTa modeling files call on their base
class during construction and an eager forward pass, plus the state dict save_pretrained writes.

Deliberately absent: weight initialisation (the generator overwrites every parameter), loading, the hub,
generation, pruning, head masks, gradient checkpointing, SDPA / flash attention. config._attn_implementation
keeps its default "eager", the only path that returns attention probabilities."""
import re

import torch
from torch import nn


class PreTrainedModel(nn.Module):
    """Base of the modeling files' *PreTrainedModel classes: config holder, embedding tying, masks."""

    base_model_prefix = ""

    def __init__(self, config):
        super().__init__()
        self.config = config

    def post_init(self):
        """Called at the end of every model constructor: only the tying matters here."""
        self.tie_weights()

    # --- embeddings -------------------------------------------------------------------------------
    def get_input_embeddings(self):
        """Task heads (…ForCausalLM, …ForMaskedLM) ask their base model (attribute base_model_prefix)."""
        return getattr(self, self.base_model_prefix).get_input_embeddings()

    def get_output_embeddings(self):
        return None  # base models have no output head; the task heads override this

    def _tie_or_clone_weights(self, output_embeddings, input_embeddings):
        """Makes both modules hold the same weight Parameter (vocabulary sizes are equal here)."""
        output_embeddings.weight = input_embeddings.weight

    def tie_weights(self):
        """Output head shares the input embedding unless config.tie_word_embeddings is false; then each
        submodule defining _tie_weights ties its own tensors (T5's embed_tokens, the LM-head bias of
        BERT / RoBERTa)."""
        head = self.get_output_embeddings()
        if head is not None and getattr(self.config, "tie_word_embeddings", True):
            self._tie_or_clone_weights(head, self.get_input_embeddings())
        for module in self.modules():
            if hasattr(module, "_tie_weights"):
                module._tie_weights()

    # --- masks ------------------------------------------------------------------------------------
    def _additive_mask(self, keep):
        """1 (attend) -> 0, 0 (blocked) -> the most negative finite value of the parameters' dtype; this
        is added to the attention scores."""
        dtype = next(self.parameters()).dtype
        return (1.0 - keep.to(dtype)) * torch.finfo(dtype).min

    def get_extended_attention_mask(self, attention_mask, input_shape):
        """[batch, keys] padding mask -> additive [batch, 1, 1, keys]; for a decoder
        (config.is_decoder, T5's decoder stack) also causal: [batch, 1, queries, keys], query i seeing
        key j iff j <= i + (keys - queries)."""
        assert attention_mask.dim() == 2, "only [batch, keys] masks are emulated"
        keep = attention_mask[:, None, None, :]
        if self.config.is_decoder:
            n_q, n_k = input_shape[-1], attention_mask.shape[-1]
            keep = keep * torch.ones(n_q, n_k, device=keep.device).tril(n_k - n_q)
        return self._additive_mask(keep)

    def invert_attention_mask(self, encoder_attention_mask):
        """Cross-attention padding mask [batch, keys] -> additive [batch, 1, 1, keys]."""
        assert encoder_attention_mask.dim() == 2, "only [batch, keys] masks are emulated"
        return self._additive_mask(encoder_attention_mask[:, None, None, :])

    def get_head_mask(self, head_mask, num_hidden_layers):
        if head_mask is not None:
            raise NotImplementedError("head masks are not emulated")
        return [None] * num_hidden_layers

    def warn_if_padding_and_no_attention_mask(self, input_ids, attention_mask):
        pass  # transformers only logs a hint here


def hf_state_dict_for_save(model: nn.Module):
    """The tensors save_pretrained(safe_serialization=True) writes for these models: the state dict,
    where keys naming one shared tensor are reduced to one. Of each such group, the keys matching a
    pattern of model._tied_weights_keys (re.search) are dropped, so that one key remains (e.g. BLOOM keeps
    transformer.word_embeddings.weight, drops lm_head.weight; T5 keeps shared.weight). Shared storage in
    any other form (views at other offsets or shapes, or two unmatched keys) is refused."""
    state_dict = model.state_dict()
    patterns = getattr(model, "_tied_weights_keys", None) or []
    groups = {}
    for name, tensor in state_dict.items():
        storage = tensor.untyped_storage() if hasattr(tensor, "untyped_storage") else tensor.storage()
        groups.setdefault(storage.data_ptr(), []).append(name)
    for names in groups.values():
        if len(names) < 2:
            continue
        views = {(state_dict[n].data_ptr(), state_dict[n].shape, state_dict[n].stride()) for n in names}
        tied = [n for n in sorted(names) if any(re.search(p, n) for p in patterns)]
        drop = tied[:len(names) - 1]
        if len(views) > 1 or len(names) - len(drop) > 1:
            raise RuntimeError(f"hf_state_dict_for_save: shared tensors not emulated: {names}")
        for name in drop:
            del state_dict[name]
    return state_dict
