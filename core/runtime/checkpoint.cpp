#include "core/runtime/checkpoint.h"

#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/models/architectures.h"
#include "core/base/error.h"
#include "core/base/sha256.h"
#include "core/base/text.h"
#include "core/formats/fp8.h"
#include "core/formats/llama2c.h"
#include "core/formats/mxfp4.h"
#include "core/formats/quantization_config.h"
#include "core/tokenizers/llama2c_tokenizer.h"
#include "core/tokenizers/tokenizer_files.h"
#include "core/formats/safetensors.h"
#include "core/formats/sharded_tensors.h"
#include "core/formats/torch_zip.h"
#include "core/models/weight_table.h"
#include "core/runtime/resources.h"

namespace poslens {
namespace fs = std::filesystem;
namespace {

std::string stored_dtypes(const TensorSource& source) {
  std::set<std::string> names;
  for (const auto& t : source.tensors()) names.insert(to_string(t.dtype));
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : "+") + n;
  return out;
}

/// The state_dict file of a folder without safetensors: HF's pytorch_model.bin, or model.pt
/// (the PosLens format); empty if neither exists.
fs::path torch_zip_in(const fs::path& folder) {
  for (const char* name : {"pytorch_model.bin", "model.pt"})
    if (fs::is_regular_file(folder / name)) return folder / name;
  return {};
}

/// The config file of a checkpoint folder: config.json (HF, PosLens; also accepted for a
/// TransformerLens config) or hooked_transformer_config.json (TransformerLens's
/// HookedTransformerConfig saved as JSON); config.json's path if neither exists.
fs::path config_in(const fs::path& folder) {
  if (!fs::is_regular_file(folder / "config.json") && fs::is_regular_file(folder / "hooked_transformer_config.json"))
    return folder / "hooked_transformer_config.json";
  return folder / "config.json";
}

/// What config.json's quantization_config asks of loading (quantization_config.h); the default
/// without one or without a readable config.json (whose own errors come from the config reader).
Fp8Scaling quantization_in(const fs::path& config) {
  std::ifstream in(config);
  return fp8_scaling_in(nlohmann::json::parse(in, nullptr, false), config.string());
}

bool starts_with_zip_magic(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[2] = {0, 0};
  in.read(magic, 2);
  return in.gcount() == 2 && magic[0] == 'P' && magic[1] == 'K';
}

/// llama2.c keeps its tokenizer beside the model: tokenizer.bin, or tok<vocab>.bin.
std::unique_ptr<Tokenizer> find_llama2c_tokenizer(const fs::path& model, int64_t vocab,
                                                  std::string& note) {
  const fs::path dir = model.parent_path();
  for (const fs::path& candidate :
       {dir / "tokenizer.bin", dir / ("tok" + std::to_string(vocab) + ".bin")})
    if (fs::is_regular_file(candidate))
      return std::make_unique<Llama2cTokenizer>(candidate.string(), vocab);
  note = "no llama2.c tokenizer found beside " + model.string() + " (looked for tokenizer.bin and tok" +
         std::to_string(vocab) + ".bin; pass --tokenizer PATH)";
  return nullptr;
}

/// The tokenizer in checkpoint folder `dir` (tokenizer_files.h: tokenizer.json, tokenizer.model,
/// vocab.json + merges.txt), or null with `note` saying why: none there, or one that cannot be
/// read or does not fit the model (the model still opens; the user types token ids).
std::unique_ptr<Tokenizer> find_folder_tokenizer(const fs::path& dir, int64_t vocab, std::string& note) {
  const auto file = find_tokenizer_file(dir.string());
  if (file.empty() || fs::path(file).extension() == ".bin") {  // llama2.c files go with .bin models
    note = "no tokenizer in " + dir.string() +
           " (looked for tokenizer.json, tokenizer.model, vocab.json + merges.txt; pass "
           "--tokenizer PATH): use token ids";
    return nullptr;
  }
  try {
    auto tokenizer = read_tokenizer(file, vocab);
    if (tokenizer->vocab_size() > vocab)
      throw Error(file + ": " + std::to_string(tokenizer->vocab_size()) +
                  " tokens, more than the model's vocab_size " + std::to_string(vocab));
    return tokenizer;
  } catch (const Error& e) {
    note = std::string(e.what()) + ": use token ids";
    return nullptr;
  }
}

/// Refuses, before anything is allocated, weights that cannot fit the memory this machine has
/// free in `dtype`: a file claiming 10^12 parameters would otherwise fail deep in LibTorch's
/// allocator, and one claiming a little more than the memory would swap the machine to a halt.
/// Counts every tensor of the file (an upper bound of what the model loads). On a GPU the
/// weights pass through host memory one tensor at a time, so only the largest one is counted.
void check_weights_fit(const std::string& where, const TensorSource& source, c10::Device device,
                       c10::ScalarType dtype) {
  double parameters = 0, largest = 0;  // double: hostile shapes must not overflow the sum
  for (const auto& t : source.tensors()) {
    double n = 1;
    for (const int64_t d : t.shape) n *= static_cast<double>(d);
    parameters += n;
    largest = std::max(largest, n);
  }
  const double bytes = (device.is_cpu() ? parameters : largest) * c10::elementSize(dtype);
  const int64_t available = available_memory_bytes();
  if (available < 0 || bytes <= static_cast<double>(available)) return;
  std::ostringstream count;
  count << std::setprecision(3) << parameters;
  const int64_t shown = bytes < 9e18 ? static_cast<int64_t>(bytes) : int64_t{9'000'000'000'000'000'000};
  throw Error(where + ": the checkpoint holds " + count.str() + " parameters, " + gigabytes(shown) +
              " as " + dtype_name(dtype) + (device.is_cpu() ? "" : " for its largest tensor") +
              ", more than the " + gigabytes(available) + " of memory available");
}

LoadedModel finish(LoadedModel out, const TensorSource& source, ModelConfig config,
                   const LoadOptions& options, std::vector<std::string> weight_files,
                   Fp8Scaling fp8_scaling = {}) {
  const auto device = parse_device(options.device);
  const auto dtype = parse_dtype(options.dtype);
  config.validate();
  // FP8 weights (X + X_scale_inv or X_scale) and gpt-oss's MXFP4 experts (X_blocks + X_scales)
  // read as the tensors they stand for.
  const Fp8Dequantized fp8(source, std::move(fp8_scaling), dtype);
  const Mxfp4Dequantized unpacked(fp8);
  check_weights_fit(out.path, unpacked, device, dtype);
  auto weights = load_weights(unpacked, weight_table_for(config, unpacked), config, device, dtype,
                              options.progress);
  if (!options.tokenizer.empty()) {  // --tokenizer overrides what was found
    out.tokenizer = read_tokenizer(options.tokenizer, config.vocab_size);
    out.tokenizer_note.clear();
  }
  out.stored_dtype = stored_dtypes(source) + (unpacked.packed_count() ? " (U8: MXFP4 experts, dequantised)" : "") +
                     (fp8.quantised_count() ? " (F8_E4M3: " + fp8.summary() + ")" : "");
  out.weights_sha256 = sha256_of_files(weight_files);
  out.weight_files = std::move(weight_files);
  out.model = std::make_unique<Transformer>(std::move(config), std::move(weights));
  out.n_params = parameter_count(out.model->weights());
  return out;
}

}  // namespace

c10::Device parse_device(const std::string& name) {
  if (name == "auto") return torch::cuda::is_available() ? c10::Device(c10::kCUDA, 0) : c10::kCPU;
  if (name == "cpu") return c10::kCPU;
  if (name == "cuda" || name.rfind("cuda:", 0) == 0) {
    if (!torch::cuda::is_available())
      throw Error("device \"" + name + "\" requested, but this LibTorch build has no CUDA device");
    try {
      return c10::Device(name);
    } catch (const c10::Error&) {
      throw Error("invalid device \"" + name + "\"");
    }
  }
  throw Error("unknown device \"" + name + "\" (use cpu, cuda, cuda:N or auto)");
}

c10::ScalarType parse_dtype(const std::string& name) {
  if (name == "float32" || name == "fp32") return torch::kFloat32;
  if (name == "bfloat16" || name == "bf16") return torch::kBFloat16;
  if (name == "float16" || name == "fp16") return torch::kFloat16;
  throw Error("unknown dtype \"" + name + "\" (use float32, bfloat16 or float16)");
}

std::string dtype_name(c10::ScalarType dtype) {
  switch (dtype) {
    case torch::kFloat32: return "float32";
    case torch::kBFloat16: return "bfloat16";
    case torch::kFloat16: return "float16";
    default: return c10::toString(dtype);
  }
}

namespace {

/// One line from a PosLens config's "training" object: "flipflop (L 128), step 1500/1500,
/// seed 0, loss 0.642; error test 0.2%, ood 4.1%".
std::string training_summary(const std::string& training_json) {
  const auto t = nlohmann::json::parse(training_json, nullptr, false);
  if (!t.is_object()) return training_json;
  std::ostringstream out;
  out << t.value("task", std::string("?")) << " (L " << t.value("length", int64_t{0}) << "), step "
      << t.value("step", int64_t{0}) << "/" << t.value("steps", int64_t{0}) << ", seed "
      << t.value("seed", int64_t{0}) << ", loss " << std::setprecision(3)
      << t.value("loss", 0.0);
  if (t.contains("eval") && t["eval"].is_object()) {
    out << "; error";
    const char* sep = " ";
    for (const auto& [split, r] : t["eval"].items()) {
      out << sep << split << " " << std::fixed << std::setprecision(1)
          << r.value("error_pct", 0.0) << "%";
      out.unsetf(std::ios::fixed);
      sep = ", ";
    }
  }
  return out.str();
}

/// ", 256 on the dense layers 0, 2" for a mixture of experts with dense layers among its
/// layers (Llama 4 Maverick); empty otherwise.
std::string dense_mlp_widths(const ModelConfig& c) {
  std::string layers;
  int64_t width = 0;
  for (int64_t l = 0; l < c.n_layers; ++l)
    if (const int64_t w = c.dense_mlp_width(l); w > 0) {
      layers += (layers.empty() ? "" : ", ") + std::to_string(l);
      width = w;
    }
  if (layers.empty()) return "";
  const std::string kind = c.mlp == MlpType::MoE ? " on the dense layer" : " on layer";  // Gemma 4: double-wide MLPs
  return ", " + std::to_string(width) + kind + (layers.find(',') == std::string::npos ? " " : "s ") + layers;
}

/// ", 16 on layers 2, 5" where some layers' value of `field` (d_head, n_kv_heads) differs from
/// the model's (Gemma 4's global layers); empty otherwise.
std::string other_layers(const ModelConfig& c, int64_t ModelConfig::*field) {
  std::vector<std::pair<int64_t, std::string>> values;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const int64_t v = c.layer_config(l).*field;
    if (v == c.*field) continue;
    auto it = std::find_if(values.begin(), values.end(), [&](const auto& e) { return e.first == v; });
    if (it == values.end()) it = values.insert(values.end(), {v, ""});
    it->second += (it->second.empty() ? "" : ", ") + std::to_string(l);
  }
  std::string out;
  for (const auto& [v, layers] : values)
    out += ", " + std::to_string(v) + (layers.find(',') == std::string::npos ? " on layer " : " on layers ") + layers;
  return out;
}

/// Gemma 4's key/value sharing for `info`: ", layers 4, 5 reuse the keys and values of layers 3,
/// 2"; empty for other models.
std::string shared_keys_values(const ModelConfig& c) {
  std::string layers, sources;
  for (int64_t l = 0; l < c.n_layers; ++l)
    if (const int64_t s = c.layer_config(l).kv_source_layer; s >= 0) {
      layers += (layers.empty() ? "" : ", ") + std::to_string(l);
      sources += (sources.empty() ? "" : ", ") + std::to_string(s);
    }
  if (layers.empty()) return "";
  const bool one = layers.find(',') == std::string::npos;
  return std::string(one ? ", layer " : ", layers ") + layers + " reuse" + (one ? "s" : "") + " the keys and values of " +
         (one ? "layer " : "layers ") + sources;
}

/// " (16 rotary + 8 no-position channels, decoupled RoPE; values 12)" for multi-head latent
/// attention; " (values 12)" where only the values' width differs; empty otherwise.
std::string head_channels(const ModelConfig& c) {
  const std::string values = c.value_head_dim() != c.d_head ? "values " + std::to_string(c.value_head_dim()) : "";
  if (!c.latent_attention()) return values.empty() ? "" : " (" + values + ")";
  return " (" + std::to_string(c.qk_rope_head_dim) + " rotary + " + std::to_string(c.d_head - c.qk_rope_head_dim) +
         " no-position channels, decoupled RoPE" + (values.empty() ? "" : "; " + values) + ")";
}

/// How a mixture of experts chooses and weighs its experts, for `info`: ", sigmoid-weighted
/// inputs", ", weights softmax over all experts × 16, from the top 3 of 8 groups", …; empty for
/// the softmax of the top k.
std::string expert_routing(const ModelConfig& c) {
  std::string out;
  if (c.expert_routing == ExpertRouting::SigmoidOnInput) out = ", sigmoid-weighted inputs";
  if (c.expert_routing == ExpertRouting::SoftmaxAll) out = ", weights softmax over all experts";
  if (c.expert_routing == ExpertRouting::SigmoidBiased)
    out = std::string(", weights sigmoid") + (c.norm_topk_prob ? " renormalised" : "") + ", chosen with a bias";
  if (c.expert_routing == ExpertRouting::ScaledSoftmaxAll)
    out = ", weights softmax over all experts renormalised over the top k × a scale per expert, from the normed input";
  if (c.routed_scaling_factor != 1.0) out += " × " + significant(c.routed_scaling_factor, 4);
  if (c.n_expert_groups > 1)
    out += ", from the top " + std::to_string(c.topk_expert_groups) + " of " + std::to_string(c.n_expert_groups) + " groups";
  return out;
}

}  // namespace

std::string describe(const LoadedModel& loaded) {
  const auto& c = loaded.model->config();
  std::ostringstream out;
  out << "checkpoint:        " << loaded.path << "\n"
      << "format:            " << loaded.format << "\n"
      << "architecture:      " << c.architecture << "\n"
      << "position encoding: " << loaded.model->position_encoding().describe() << "\n";
  if (c.per_layer_schemes()) {
    // Each distinct encoding of the layers, with the layers that use it.
    std::vector<std::pair<std::string, std::string>> encodings;
    for (int l = 0; l < c.n_layers; ++l) {
      const auto d = loaded.model->position_encoding(l).describe();
      auto it = std::find_if(encodings.begin(), encodings.end(), [&](const auto& e) { return e.first == d; });
      if (it == encodings.end()) it = encodings.insert(encodings.end(), {d, ""});
      it->second += (it->second.empty() ? "" : ", ") + std::to_string(l);
    }
    // Layers that differ only in their MLP (DeepSeek's dense first layers) have one type.
    const auto types = layer_types_summary(c);
    if (encodings.size() > 1 || types.find(';') != std::string::npos) {
      out << "layer types:       " << types << "\n";
      for (const auto& [encoding, layers] : encodings)
        out << (layers.find(',') == std::string::npos ? "  layer " : "  layers ") << layers << ": " << encoding << "\n";
    }
  }
  if (c.encoder_decoder())
    out << "encoder position:  " << loaded.model->encoder_position_encoding().describe() << "\n"
        << "n_encoder_layers:  " << c.n_encoder_layers << " (bidirectional; the decoder's below, with cross-attention)\n";
  out << "d_model:           " << c.d_model << "\n"
      << "n_layers:          " << c.n_layers << "\n"
      << "n_heads:           " << c.n_heads << "\n"
      << "n_kv_heads:        " << c.n_kv_heads << other_layers(c, &ModelConfig::n_kv_heads) << "\n"
      << "d_head:            " << c.d_head << head_channels(c) << other_layers(c, &ModelConfig::d_head) << "\n"
      << "d_mlp:             " << c.d_mlp << dense_mlp_widths(c) << "\n"
      << "vocab:             " << c.vocab_size << "\n"
      << "n_ctx:             " << c.n_ctx << "\n"
      << "block:             " << to_string(c.norm) << ", ";
  // How many layers have a feature, and " on 6 of 8 layers" where some leave a model-wide feature
  // out (Llama 4's NoPE layers); empty when all have it.
  const auto layers_with = [&](auto has) {
    int64_t n = 0;
    for (int64_t l = 0; l < c.n_layers; ++l) n += has(c.layer_config(l)) ? 1 : 0;
    return n;
  };
  const auto of_layers = [&](int64_t n) {
    return n == c.n_layers ? std::string() : " on " + std::to_string(n) + " of " + std::to_string(c.n_layers) + " layers";
  };
  const auto on_layers = [&](auto has) { return of_layers(layers_with(has)); };
  const auto moe_layers = on_layers([](const ModelConfig& l) { return l.mlp == MlpType::MoE; });
  if (c.mlp == MlpType::MoE)
    out << "mixture-of-experts MLP (" << c.n_experts << " experts, top " << c.n_experts_per_token << ", "
        << (c.expert_activation == ExpertActivation::ClampedSwiGLU
                ? "clamped SwiGLU at " + significant(c.swiglu_limit, 3)
                : std::string("gated ") + to_string(c.activation))
        << expert_routing(c)
        << (c.experts_beside_mlp ? ", beside a dense gated MLP" : c.shared_expert ? ", a shared expert" : "")
        << (c.shared_expert && c.shared_expert_width > 0 && c.shared_expert_width != c.d_mlp
                ? " " + std::to_string(c.shared_expert_width) + " wide" : "")
        << ")" << moe_layers
        << (moe_layers.empty() ? "" : ", a dense gated MLP on the others");
  else
    out << to_string(c.mlp) << " " << to_string(c.activation) << " MLP";
  if (c.latent_attention())
    out << ", multi-head latent attention (kv_lora_rank " << c.kv_lora_rank
        << (c.q_lora_rank > 0 ? ", q_lora_rank " + std::to_string(c.q_lora_rank) : std::string()) << ")";
  if (c.attention_sinks) out << ", a learned attention sink per head";
  if (c.v_norm) out << ", v RMSNorm per head (no gain)";
  if (const int64_t n = layers_with([](const ModelConfig& l) { return l.values_from_keys; }); n > 0)
    out << ", values from the keys' projection" << of_layers(n);
  out << shared_keys_values(c);
  if (c.per_layer_input_width > 0) out << ", per-layer inputs of " << c.per_layer_input_width << " (PLE)";
  if (c.layer_scalar) out << ", a scalar on each layer's output";
  if (c.sliding_window) out << ", sliding window " << c.sliding_window;
  if (c.parallel_residual) out << ", parallel attention + MLP";
  if (c.attention_chunk_size) out << ", attention in chunks of " << c.attention_chunk_size;
  if (c.qk_norm == QkNorm::L2) out << ", q/k L2-normalised per head (no gain)";
  else if (c.qk_norm != QkNorm::None)
    out << ", q/k RMSNorm " << (c.qk_norm == QkNorm::PerHead ? "per head" : "over the projection");
  if (c.qk_norm != QkNorm::None) out << on_layers([](const ModelConfig& l) { return l.qk_norm != QkNorm::None; });
  if (c.attn_temperature_scale != 0.0)
    out << ", query temperature 1 + " << c.attn_temperature_scale << "·ln(1 + floor((i + 1) / "
        << c.attn_temperature_floor << "))"
        << on_layers([](const ModelConfig& l) { return l.attn_temperature_scale != 0.0; });
  if (!c.causal) out << ", bidirectional (not causal)";
  if (c.norm_placement == NormPlacement::Post) out << ", post-norm";
  if (c.norm_placement == NormPlacement::SublayerOutput) out << ", norms on the sublayer outputs";
  if (c.norm_placement == NormPlacement::Sandwich) out << ", sandwich norms (before and after each sublayer)";
  if (c.attn_scale != 0.0) out << ", softmax scale " << c.attn_scale;
  if (c.attn_logit_softcap != 0.0) out << ", attention logits soft-capped at " << c.attn_logit_softcap;
  if (c.final_logit_softcap != 0.0)
    out << (c.attn_logit_softcap != 0.0 ? ", output logits at " : ", output logits soft-capped at ") << c.final_logit_softcap;
  if (c.mlm_head) out << ", masked-LM head";
  out << "\n"
      << "parameters:        " << loaded.n_params << "\n"
      << "stored dtype:      " << loaded.stored_dtype << "\n"
      << "weights sha256:    " << (loaded.weights_sha256.empty() ? "(made in memory)" : loaded.weights_sha256) << "\n"
      << "compute:           " << loaded.model->device() << ", " << dtype_name(loaded.model->dtype())
      << "\n"
      << "tokenizer:         " << (loaded.tokenizer ? loaded.tokenizer->describe() : loaded.tokenizer_note) << "\n";
  if (!c.training_json.empty())
    out << "trained:           " << training_summary(c.training_json) << "\n";
  if (!c.interventions.empty())
    out << "interventions:     " << c.interventions << " (the checkpoint's weights are unchanged)\n";
  return out.str();
}

LoadedModel load_checkpoint(const std::string& path_text, const LoadOptions& options) {
  const fs::path path(path_text);
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(path_text + ": no such file or folder");

  LoadedModel out;
  out.path = path_text;

  if (fs::is_directory(path)) {
    const fs::path config_path = config_in(path);
    if (!fs::is_regular_file(config_path) && fs::is_regular_file(path / "ckpt.pt"))
      return load_checkpoint((path / "ckpt.pt").string(), options);  // a nanoGPT out_dir
    if (!fs::is_regular_file(config_path))
      throw Error(path_text + ": folder has no config.json (expected an HF, PosLens or TransformerLens "
                              "checkpoint folder; TransformerLens: hooked_transformer_config.json)");
    auto config = read_hf_config(config_path.string());
    // transformers' order of preference: safetensors, sharded or not, before pickles.
    const fs::path single = path / "model.safetensors";
    const fs::path index = path / "model.safetensors.index.json";
    const fs::path bin_index = path / "pytorch_model.bin.index.json";
    std::unique_ptr<TensorSource> source;
    std::string storage;
    std::vector<std::string> files;
    const auto open_sharded = [&](const fs::path& index_path, const ShardOpener& open, const std::string& kind) {
      auto sharded = std::make_unique<ShardedTensors>(index_path.string(), open);
      files = sharded->shard_paths();
      storage = "sharded " + kind;
      source = std::move(sharded);
    };
    if (fs::is_regular_file(single)) {
      source = std::make_unique<SafetensorsFile>(single.string());
      storage = "safetensors";
      files = {single.string()};
    } else if (fs::is_regular_file(index)) {
      open_sharded(index, [](const std::string& p) { return std::make_unique<SafetensorsFile>(p); }, "safetensors");
    } else if (const auto pickled = torch_zip_in(path); !pickled.empty()) {
      source = std::make_unique<TorchZipFile>(pickled.string());
      storage = "PyTorch zip " + pickled.filename().string();
      files = {pickled.string()};
    } else if (fs::is_regular_file(bin_index)) {
      open_sharded(bin_index, [](const std::string& p) { return std::make_unique<TorchZipFile>(p); }, "PyTorch zip");
    } else {
      throw Error(path_text + ": no model.safetensors, model.safetensors.index.json, "
                              "pytorch_model.bin, pytorch_model.bin.index.json or model.pt in folder");
    }
    out.format = config.format + " (" + storage + ")";
    if (options.tokenizer.empty())
      out.tokenizer = find_folder_tokenizer(path, config.vocab_size, out.tokenizer_note);
    return finish(std::move(out), *source, std::move(config), options, files, quantization_in(config_path));
  }

  // A weights file with the config beside it: a .safetensors file or a torch.save zip.
  const bool safetensors = path.extension() == ".safetensors";
  if (safetensors || starts_with_zip_magic(path)) {
    const fs::path config = config_in(path.parent_path());
    const std::string kind =
        safetensors ? "a .safetensors file" : "a PyTorch zip (torch.save) state_dict";
    if (!safetensors && !fs::is_regular_file(config)) {
      // Without a config beside it: a training checkpoint that carries its own (nanoGPT).
      std::unique_ptr<TorchZipFile> zip;
      try {
        zip = std::make_unique<TorchZipFile>(path_text);
      } catch (const Error& e) {
        throw Error(std::string(e.what()) + " (a PyTorch zip without config.json beside it: only a "
                    "nanoGPT ckpt.pt carries its own config)");
      }
      if (is_nanogpt_checkpoint(*zip)) {
        auto model_config = nanogpt_config(*zip);
        out.format = "nanoGPT (PyTorch zip " + path.filename().string() + ")";
        if (options.tokenizer.empty())
          out.tokenizer = find_folder_tokenizer(path.parent_path(), model_config.vocab_size, out.tokenizer_note);
        return finish(std::move(out), *zip, std::move(model_config), options, {path_text});
      }
    }
    if (!fs::is_regular_file(config))
      throw Error(path_text + ": " + kind + " needs config.json beside it (" + config.string() +
                  " not found; a nanoGPT ckpt.pt carries its own model_args)");
    auto model_config = read_hf_config(config.string());
    std::unique_ptr<TensorSource> source;
    if (safetensors)
      source = std::make_unique<SafetensorsFile>(path_text);
    else
      source = std::make_unique<TorchZipFile>(path_text);
    out.format = model_config.format + (safetensors ? " (safetensors)" : " (PyTorch zip)");
    if (options.tokenizer.empty())
      out.tokenizer = find_folder_tokenizer(path.parent_path(), model_config.vocab_size,
                                            out.tokenizer_note);
    return finish(std::move(out), *source, std::move(model_config), options, {path_text}, quantization_in(config));
  }

  Llama2cFile source(path_text);
  out.format = "llama2.c";
  const ModelConfig config = llama2c_config(source.header());
  if (options.tokenizer.empty())  // an explicit --tokenizer is read by finish()
    out.tokenizer = find_llama2c_tokenizer(path, config.vocab_size, out.tokenizer_note);
  return finish(std::move(out), source, config, options, {path_text});
}

}  // namespace poslens
