// Forward-pass cost with and without captures.
//   poslens_bench_forward [--benchmark_filter=...]
// Models: stories260K (real, from ../shared/fixtures) and a randomly initialised Llama of
// GPT-2-small size (12 layers, d_model 768, 12 heads, d_mlp 3072, vocab 32000), 512 tokens.
// The PyTorch-eager counterpart is tools/bench_pytorch_forward.py.
#include <torch/torch.h>

#include <benchmark/benchmark.h>

#include <filesystem>

#include "core/base/compute_setup.h"
#include "core/runtime/checkpoint.h"
#include "core/runtime/transformer.h"

namespace {

using poslens::CaptureSpec;
using poslens::Captures;
using poslens::Transformer;

/// A Llama block model of GPT-2-small size with random weights (std 0.02, norms 1).
std::unique_ptr<Transformer> gpt2_small_sized_llama() {
  poslens::ModelConfig c;
  c.format = "random";
  c.architecture = "llama (random)";
  c.d_model = 768, c.n_layers = 12, c.n_heads = 12, c.n_kv_heads = 12, c.d_head = 64;
  c.d_mlp = 3072, c.vocab_size = 32000, c.n_ctx = 1024;
  c.pe_components = {{"rope", R"({"type": "rope", "pairing": "half_split"})"}};
  torch::manual_seed(0);
  auto r = [](std::vector<int64_t> s) { return torch::randn(s) * 0.02; };
  poslens::ModelWeights w;
  w.tok_embed = r({c.vocab_size, c.d_model});
  w.final_norm = torch::ones({c.d_model});
  w.unembed = r({c.vocab_size, c.d_model});
  for (int l = 0; l < c.n_layers; ++l) {
    poslens::LayerWeights lw;
    lw.attn_norm = torch::ones({c.d_model});
    lw.mlp_norm = torch::ones({c.d_model});
    lw.w_q = r({768, 768}), lw.w_k = r({768, 768}), lw.w_v = r({768, 768}), lw.w_o = r({768, 768});
    lw.w_gate = r({3072, 768}), lw.w_up = r({3072, 768}), lw.w_down = r({768, 3072});
    w.layers.push_back(lw);
  }
  return std::make_unique<Transformer>(c, w);
}

const Transformer& model(int which) {
  static std::unique_ptr<Transformer> big;
  static std::unique_ptr<poslens::LoadedModel> stories;
  if (which == 0) {
    if (!stories) {
      const auto path = std::filesystem::path(POSLENS_FIXTURES_DIR) / "stories260K/stories260K.bin";
      stories = std::make_unique<poslens::LoadedModel>(
          poslens::load_checkpoint(path.string(), {"cpu", "float32", ""}));
    }
    return *stories->model;
  }
  if (!big) big = gpt2_small_sized_llama();
  return *big;
}

void BM_Forward(benchmark::State& state) {
  const int which = static_cast<int>(state.range(0));
  const bool capture = state.range(1) != 0;
  if (which == 0 && !std::filesystem::exists(std::filesystem::path(POSLENS_FIXTURES_DIR) /
                                             "stories260K/stories260K.bin")) {
    state.SkipWithError("stories260K fixture absent");
    return;
  }
  const auto& m = model(which);
  torch::manual_seed(1);
  const auto tokens = torch::randint(3, m.config().vocab_size, {1, 512}, torch::kLong);
  const CaptureSpec spec = capture ? CaptureSpec({"blocks.*.attn.hook_pattern"}) : CaptureSpec();
  for (auto _ : state) {
    Captures captures;
    c10::InferenceMode inference;
    auto logits = m.forward(tokens, spec, &captures);
    benchmark::DoNotOptimize(logits.data_ptr());
  }
  state.SetLabel(std::string(which == 0 ? "stories260K" : "gpt2-small-size llama") +
                 (capture ? ", every pattern captured" : ", no capture"));
}

BENCHMARK(BM_Forward)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->ArgNames({"model", "capture"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(10.0);

}  // namespace

int main(int argc, char** argv) {
  poslens::set_up_compute();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
