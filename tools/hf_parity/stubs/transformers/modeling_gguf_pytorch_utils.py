"""Stand-in: configuration_utils imports load_gguf_checkpoint (GGUF loading, never used here)."""


def load_gguf_checkpoint(*args, **kwargs):
    raise NotImplementedError("GGUF loading is not emulated")
