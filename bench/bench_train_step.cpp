// Training-step time of a PosLens-format model: the trainer's own step (training_step: forward,
// cross-entropy, backward, gradient clipping, AdamW) on a fixed random batch.
//   poslens_bench_train_step CONFIG.json [--batch 32] [--length 128] [--steps 20] [--warmup 3]
//                            [--profile TRACE.json]
// CONFIG is a complete PosLens config.json (vocab_size, n_ctx). Prints the median and the
// quartiles in ms. --profile records the measured steps with LibTorch's autograd profiler into a
// Chrome trace (tools/profile_ops.py sums it per operator; its timings include the profiler's
// overhead, so the printed median is then not comparable). The PyTorch-eager counterpart is
// tools/bench_pytorch_train.py; scripts/bench_train.sh runs both side by side.
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/base/compute_setup.h"
#include "core/base/error.h"
#include "core/base/untrusted_json.h"
#include "core/models/poslens_model.h"
#include "core/runtime/transformer.h"
#include "core/train/trainer.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: poslens_bench_train_step CONFIG.json [--batch B] [--length T] "
                 "[--steps N] [--warmup W] [--profile TRACE.json]\n";
    return 2;
  }
  int64_t batch = 32, length = 128, steps = 20, warmup = 3;
  std::string profile;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--profile") {
      profile = argv[i + 1];
      continue;
    }
    const int64_t value = std::stoll(argv[i + 1]);
    if (flag == "--batch") batch = value;
    else if (flag == "--length") length = value;
    else if (flag == "--steps") steps = value;
    else if (flag == "--warmup") warmup = value;
    else { std::cerr << "unknown flag " << flag << "\n"; return 2; }
  }
  try {
    poslens::set_up_compute();
    const auto config = poslens::poslens_config_from_text(
        poslens::read_small_file(argv[1], poslens::kMaxJsonFileBytes), argv[1]);
    const poslens::Transformer model(config, poslens::initialize_weights(config, 0));
    std::vector<at::Tensor> parameters;
    for (auto& [name, t] : poslens::named_parameters(config, model.weights()))
      parameters.push_back(t.requires_grad_(true));
    torch::optim::AdamW optimizer(
        parameters, torch::optim::AdamWOptions(1e-3).betas({0.9, 0.999}).weight_decay(0.01));
    torch::manual_seed(1);
    const auto tokens = torch::randint(0, config.vocab_size, {batch, length}, torch::kLong);
    const auto weights = torch::ones({batch, length - 1});
    std::vector<double> ms;
    std::unique_ptr<torch::autograd::profiler::RecordProfile> recording;
    for (int64_t s = 0; s < warmup + steps; ++s) {
      if (s == warmup && !profile.empty())
        recording = std::make_unique<torch::autograd::profiler::RecordProfile>(profile);
      const auto start = std::chrono::steady_clock::now();
      poslens::train::training_step(model, optimizer, parameters, tokens, weights, 1.0);
      const double elapsed =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (s >= warmup) ms.push_back(elapsed);
    }
    recording.reset();  // writes the trace
    std::sort(ms.begin(), ms.end());
    std::printf("poslens  %s  batch %lld x %lld: median %.1f ms/step (q1 %.1f, q3 %.1f, %lld steps)\n",
                argv[1], static_cast<long long>(batch), static_cast<long long>(length),
                ms[ms.size() / 2], ms[ms.size() / 4], ms[3 * ms.size() / 4],
                static_cast<long long>(steps));
  } catch (const std::exception& e) {
    std::cerr << "poslens_bench_train_step: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
