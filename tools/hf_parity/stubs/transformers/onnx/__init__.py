"""Stand-in for transformers.onnx: the configuration files subclass these for ONNX export, which is never
used here, so they are empty classes."""


class OnnxConfig:
    pass


class OnnxConfigWithPast(OnnxConfig):
    pass


class OnnxSeq2SeqConfigWithPast(OnnxConfigWithPast):
    pass


class PatchingSpec:
    pass
