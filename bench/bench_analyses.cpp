// Each streamed analysis's cost as a multiple of one forward pass of the same input, in one run:
//   poslens_bench_analyses CHECKPOINT [SECOND_CHECKPOINT] [T] [REPEATS]
// The input is T random token ids (seed 0) below the vocabulary; each timing is the median of
// REPEATS (default 3) runs on this process's threads. SECOND_CHECKPOINT (default: CHECKPOINT
// again) is what the divergence compares with. Prints one line per analysis: ms and × forward.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "analysis/frequency_usage.h"
#include "analysis/heads.h"
#include "analysis/massive_activations.h"
#include "analysis/divergence.h"
#include "analysis/forward_cost.h"
#include "analysis/value_norms.h"
#include "core/base/compute_setup.h"
#include "core/runtime/checkpoint.h"
#include "core/runtime/hook_sink.h"

namespace {

double median_ms(int repeats, const std::function<void()>& f) {
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CHECKPOINT [SECOND_CHECKPOINT] [T] [REPEATS]\n", argv[0]);
    return 2;
  }
  poslens::set_up_compute();
  const std::string first_path = argv[1], second_path = argc > 2 ? argv[2] : argv[1];
  const int64_t T = argc > 3 ? std::stoll(argv[3]) : 512;
  const int repeats = argc > 4 ? std::stoi(argv[4]) : 3;
  const auto first = poslens::load_checkpoint(first_path, {});
  const auto second = poslens::load_checkpoint(second_path, {});
  const auto& cfg = first.model->config();
  torch::manual_seed(0);
  const auto random = torch::randint(std::min<int64_t>(3, cfg.vocab_size - 1), cfg.vocab_size, {T}, torch::kLong);
  const std::vector<int64_t> ids(random.data_ptr<int64_t>(), random.data_ptr<int64_t>() + T);
  const bool rotary = first.model->position_encoding().rotary_info(T).has_value();

  c10::InferenceMode inference;
  const double forward = median_ms(repeats, [&] {
    poslens::NoHooks none;
    poslens::ForwardOptions options;
    options.logits = poslens::LogitsReturned::None;
    first.model->forward(torch::tensor(ids, torch::kLong).unsqueeze(0), none, {}, options);
  });
  std::printf("%s, T = %lld, %d threads, median of %d\n", first_path.c_str(), static_cast<long long>(T),
              at::get_num_threads(), repeats);
  std::printf("%-44s %9.1f ms  1.00 ×\n", "forward (no hooks)", forward);
  const auto row = [&](const char* name, const std::function<void()>& f) {
    const double ms = median_ms(repeats, f);
    std::printf("%-44s %9.1f ms  %.2f ×\n", name, ms, ms / forward);
  };
  poslens::HeadMetricsOptions no_induction;
  no_induction.induction_length = 0;
  row("heads (metrics + detectors, no induction)", [&] { poslens::compute_head_metrics(first, ids, {}, no_induction); });
  row("heads (with induction on 2·64+1 tokens)", [&] { poslens::compute_head_metrics(first, ids); });
  row("massive-activations (top 10)", [&] { poslens::compute_massive_activations(first, ids, 10); });
  if (rotary) row("frequency-usage", [&] { poslens::compute_frequency_usage(first, ids); });
  row("value-norms", [&] { poslens::compute_value_norms(first, ids); });
  row("divergence (second model, same input)", [&] { poslens::compute_pattern_divergence(first, second, ids); });
  return 0;
}
