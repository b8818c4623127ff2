"""Stand-in for transformers.pytorch_utils: the names the modeling files import. Feed-forward chunking is
emulated for chunk_size 0 only (the configs' default: one call over the whole input); head pruning is
not available."""
ALL_LAYERNORM_LAYERS = []  # T5 appends its norm class; only transformers' Trainer reads the list


def apply_chunking_to_forward(forward_fn, chunk_size, chunk_dim, *input_tensors):
    if chunk_size:
        raise NotImplementedError("chunk_size_feed_forward > 0 is not emulated")
    return forward_fn(*input_tensors)


def find_pruneable_heads_and_indices(*args, **kwargs):
    raise NotImplementedError("head pruning is not emulated")


prune_linear_layer = find_pruneable_heads_and_indices
