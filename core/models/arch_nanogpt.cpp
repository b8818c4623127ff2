// nanoGPT checkpoints (karpathy/nanoGPT train.py: torch.save({"model": state_dict,
// "optimizer": ..., "model_args": {n_layer, n_head, n_embd, block_size, bias, vocab_size,
// dropout}, "iter_num", "best_val_loss", "config"}, "ckpt.pt")). The model is GPT-2's block
// (model.py): learned absolute positions, pre-LN LayerNorm (without bias when bias=False),
// c_attn as an nn.Linear holding q|k|v in three consecutive blocks (not GPT-2's transposed
// Conv1D), exact GELU (nn.GELU()), lm_head tied to wte. Weights sit under "model.", after
// torch.compile under "model._orig_mod.". The optimizer state and the causal-mask buffer
// (attn.bias, saved by PyTorch < 2 without flash attention) are not read.
#include "core/models/hf_config.h"
#include "core/base/error.h"
#include "core/formats/torch_zip.h"

namespace poslens {
namespace {

int64_t model_arg(const std::map<std::string, nlohmann::json>& s, const std::string& key, const std::string& where) {
  const auto it = s.find("model_args." + key);
  if (it == s.end() || !it->second.is_number_integer())
    throw Error(where + ": nanoGPT checkpoint without an integer model_args[\"" + key + "\"]");
  return it->second.get<int64_t>();
}

}  // namespace

bool is_nanogpt_checkpoint(const TorchZipFile& zip) {
  return zip.scalars().count("model_args.n_layer") && zip.scalars().count("model_args.n_embd");
}

ModelConfig nanogpt_config(const TorchZipFile& zip) {
  const auto& s = zip.scalars();
  const std::string where = zip.describe();
  ModelConfig c;
  c.format = "nanoGPT";
  c.architecture = "nanoGPT";
  c.d_model = model_arg(s, "n_embd", where);
  c.n_layers = model_arg(s, "n_layer", where);
  c.n_heads = model_arg(s, "n_head", where);
  c.n_kv_heads = c.n_heads;
  c.d_head = arch::head_size(c.d_model, c.n_heads, "n_embd", "n_head", where);
  c.d_mlp = 4 * c.d_model;
  c.vocab_size = model_arg(s, "vocab_size", where);
  c.n_ctx = model_arg(s, "block_size", where);
  c.norm = NormType::LayerNorm;
  c.norm_eps = 1e-5;  // F.layer_norm's in model.py
  c.mlp = MlpType::Plain;
  c.activation = Activation::GeluExact;
  const auto bias = s.find("model_args.bias");
  c.qkv_bias = c.attn_out_bias = c.mlp_bias = bias == s.end() || (bias->second.is_boolean() && bias->second.get<bool>());
  c.pe_components = {{"learned_absolute", R"({"type": "learned_absolute"})"}};
  c.tie_word_embeddings = true;
  c.bos_token_id = -1;
  return c;
}

namespace arch {
namespace {

WeightTable nanogpt_table(const ModelConfig& c, const TensorSource& source) {
  std::string prefix = "model.";
  for (const auto& t : source.tensors())
    if (t.name.rfind("model._orig_mod.", 0) == 0) prefix = "model._orig_mod.";
  const std::string m = prefix + "transformer.", p = m + "h.{L}.";
  const int64_t d = c.d_model;
  WeightRule wpe;
  wpe.pattern = m + "wpe.weight";
  wpe.stored_shape = {c.n_ctx, d};
  wpe.pe_name = "pos_embed";
  WeightTable t;
  t.rules = {
      {m + "wte.weight", {c.vocab_size, d}, {}, &ModelWeights::tok_embed},
      {p + "ln_1.weight", {d}, {&LayerWeights::attn_norm}},
      {p + "attn.c_attn.weight", {3 * d, d}, {&LayerWeights::w_q, &LayerWeights::w_k, &LayerWeights::w_v}},
      {p + "attn.c_proj.weight", {d, d}, {&LayerWeights::w_o}},
      {p + "ln_2.weight", {d}, {&LayerWeights::mlp_norm}},
      {p + "mlp.c_fc.weight", {c.d_mlp, d}, {&LayerWeights::w_up}},
      {p + "mlp.c_proj.weight", {d, c.d_mlp}, {&LayerWeights::w_down}},
      {m + "ln_f.weight", {d}, {}, &ModelWeights::final_norm},
  };
  if (c.qkv_bias) {
    const std::vector<WeightRule> biases = {
        {p + "ln_1.bias", {d}, {&LayerWeights::attn_norm_bias}},
        {p + "attn.c_attn.bias", {3 * d}, {&LayerWeights::b_q, &LayerWeights::b_k, &LayerWeights::b_v}},
        {p + "attn.c_proj.bias", {d}, {&LayerWeights::b_o}},
        {p + "ln_2.bias", {d}, {&LayerWeights::mlp_norm_bias}},
        {p + "mlp.c_fc.bias", {c.d_mlp}, {&LayerWeights::b_up}},
        {p + "mlp.c_proj.bias", {d}, {&LayerWeights::b_down}},
        {m + "ln_f.bias", {d}, {}, &ModelWeights::final_norm_bias},
    };
    t.rules.insert(t.rules.end(), biases.begin(), biases.end());
  }
  t.rules.push_back(wpe);
  // model.py always ties lm_head to wte (one storage in the file): the unembedding is wte.
  t.ignored = {p + "attn.bias", prefix + "lm_head.weight"};
  // Everything else in ckpt.pt (optimizer state, best_val_loss) is the trainer's, not the model's.
  for (const auto& info : source.tensors())
    if (info.name.rfind("model.", 0) != 0) t.ignored.push_back(info.name);
  return t;
}

}  // namespace

std::vector<ArchitectureEntry> nanogpt_architectures() {
  return {{"nanoGPT", {}, nullptr, nanogpt_table}};
}

}  // namespace arch
}  // namespace poslens
