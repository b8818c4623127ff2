#pragma once
// config.json's quantization_config: which quantised checkpoints PosLens reads and how their FP8
// weights are scaled (fp8.h). quant_method "fp8" (DeepSeek-V3's blocks), "compressed-tensors" with
// FP8 float-quantized weights (llm-compressor's releases) and "mxfp4" (gpt-oss, mxfp4.h, which
// needs nothing from here); every other method is refused by name.
#include <nlohmann/json_fwd.hpp>

#include <string>

#include "core/formats/fp8.h"

namespace poslens {

/// The FP8 scaling `config` (a parsed config.json) asks for: quant_method "fp8" — X_scale_inv in
/// blocks of weight_block_size (default [128, 128]); "compressed-tensors" — X.weight_scale with
/// each config group's weights.strategy (tensor, channel, group of group_size, block of
/// block_structure), activation scales unread; "mxfp4" or no quantization_config — the default.
/// Throws poslens::Error naming `where` and the key for any other quant_method (gptq, awq,
/// bitsandbytes, ...), a compressed-tensors format other than float-quantized / naive-quantized
/// (int4 pack-quantized, nvfp4, ...), weights that are not symmetric 8-bit floats, a non-empty
/// transform_config (rotated weights) or sparsity_config, and a malformed block size.
Fp8Scaling fp8_scaling_in(const nlohmann::json& config, const std::string& where);

}  // namespace poslens
