#include "core/formats/quantization_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "core/base/error.h"

namespace poslens {
namespace {

/// `node[key]` as a string, or "" when absent, null or not a string.
std::string text_at(const nlohmann::json& node, const char* key) {
  return node.is_object() && node.contains(key) && node[key].is_string() ? node[key].get<std::string>() : "";
}

/// Two positive integers [rows, cols] (weight_block_size, block_structure).
Fp8BlockSize block_size_of(const nlohmann::json& size, const std::string& where, const std::string& key) {
  if (!size.is_array() || size.size() != 2 || !size[0].is_number_integer() || !size[1].is_number_integer() ||
      size[0].get<int64_t>() < 1 || size[1].get<int64_t>() < 1)
    throw Error(where + ": quantization_config." + key + " must be two positive integers, got " + size.dump());
  return {size[0].get<int64_t>(), size[1].get<int64_t>()};
}

Fp8Scaling fp8_blocks(const nlohmann::json& q, const std::string& where) {
  Fp8Scaling scaling;
  if (q.contains("weight_block_size") && !q["weight_block_size"].is_null())
    scaling.strategies = {{Fp8Strategy::Kind::Block, block_size_of(q["weight_block_size"], where, "weight_block_size")}};
  return scaling;
}

/// One config group's weights (compressed-tensors QuantizationArgs) as a strategy.
Fp8Strategy strategy_of(const nlohmann::json& weights, const std::string& where, const std::string& key) {
  const auto strategy = text_at(weights, "strategy");
  const auto type = text_at(weights, "type");
  const bool symmetric = !weights.contains("symmetric") || weights["symmetric"] == true;
  const bool eight_bits = weights.contains("num_bits") && weights["num_bits"] == 8;
  if (type != "float" || !eight_bits || !symmetric)
    throw Error(where + ": quantization_config." + key + " quantises weights to " + (symmetric ? "" : "asymmetric ") +
                (weights.contains("num_bits") ? weights["num_bits"].dump() : "?") + "-bit " +
                (type.empty() ? "?" : type) + "; PosLens reads symmetric 8-bit float (FP8) weights of compressed-tensors");
  if (strategy == "tensor") return {Fp8Strategy::Kind::Tensor, {}};
  if (strategy == "channel") return {Fp8Strategy::Kind::Channel, {}};
  if (strategy == "group") {
    if (!weights.contains("group_size") || !weights["group_size"].is_number_integer() || weights["group_size"] < 1)
      throw Error(where + ": quantization_config." + key + ".group_size must be a positive integer");
    return {Fp8Strategy::Kind::Group, {1, weights["group_size"].get<int64_t>()}};
  }
  if (strategy == "block")
    return {Fp8Strategy::Kind::Block,
            block_size_of(weights.contains("block_structure") ? weights["block_structure"] : nlohmann::json(), where,
                          key + ".block_structure")};
  throw Error(where + ": quantization_config." + key + ".strategy \"" + strategy +
              "\": PosLens reads FP8 weights scaled per tensor, channel, group or block");
}

/// compressed-tensors' QuantizationConfig (its config.json form, ModelCompressor.update_config).
Fp8Scaling compressed_tensors(const nlohmann::json& q, const std::string& where) {
  for (const char* key : {"transform_config", "sparsity_config"})
    if (q.contains(key) && !q[key].is_null() && !q[key].empty())
      throw Error(where + ": quantization_config." + key + " is set (" +
                  (std::string(key) == "transform_config" ? "the weights are stored rotated" : "the weights are stored sparse") +
                  "); PosLens reads compressed-tensors' plain FP8 weights");
  Fp8Scaling scaling{"_scale", {}, "quantization_config.config_groups", true};
  const auto top_format = text_at(q, "format");
  if (!q.contains("config_groups") || !q["config_groups"].is_object())
    throw Error(where + ": quantization_config.config_groups is missing");
  for (const auto& [name, group] : q["config_groups"].items()) {
    const auto key = "config_groups." + name;
    const auto format = text_at(group, "format").empty() ? top_format : text_at(group, "format");
    if (format != "float-quantized" && format != "naive-quantized")
      throw Error(where + ": quantization_config." + key + " format \"" + format +
                  "\": PosLens reads compressed-tensors' \"float-quantized\" FP8 weights; open an unquantised copy");
    if (!group.contains("weights") || group["weights"].is_null()) continue;  // activations only
    const auto strategy = strategy_of(group["weights"], where, key + ".weights");
    const auto same = [&](const Fp8Strategy& s) {
      return s.kind == strategy.kind && s.block.rows == strategy.block.rows && s.block.cols == strategy.block.cols;
    };
    if (std::none_of(scaling.strategies.begin(), scaling.strategies.end(), same)) scaling.strategies.push_back(strategy);
  }
  return scaling;
}

}  // namespace

Fp8Scaling fp8_scaling_in(const nlohmann::json& config, const std::string& where) {
  if (!config.is_object() || !config.contains("quantization_config")) return {};
  const auto& q = config["quantization_config"];
  const auto method = text_at(q, "quant_method");
  if (method == "mxfp4") return {};
  if (method == "fp8") return fp8_blocks(q, where);
  if (method == "compressed-tensors") return compressed_tensors(q, where);
  throw Error(where + ": quantization_config.quant_method " + (method.empty() ? "missing" : "\"" + method + "\"") +
              ": PosLens dequantises \"fp8\" (block scales), \"compressed-tensors\" (FP8 weights) and \"mxfp4\" "
              "checkpoints; open an unquantised copy");
}

}  // namespace poslens
