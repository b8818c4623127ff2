// The U-shape probe against the plain forward pass of the same batches, in one run
// (issue: "the probe costs <= 1.3x the forward of its samples").
//   poslens_bench_probe CHECKPOINT [T] [ROUNDS]
// T defaults to the checkpoint's training length L. Each round times run_probe (every
// non-special token, automatic batch) and then Transformer::forward on exactly the batches the
// probe ran (same size, same tokens, no captures), alternating; prints each round and the
// ratio of the medians in samples/s.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "core/base/compute_setup.h"
#include "analysis/probe.h"
#include "core/runtime/checkpoint.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: poslens_bench_probe CHECKPOINT [T] [ROUNDS]\n";
    return 2;
  }
  poslens::set_up_compute();
  poslens::LoadOptions load;
  load.device = "cpu";
  const auto model = poslens::load_checkpoint(argv[1], load);
  poslens::ProbeOptions options;
  options.length = argc > 2 ? std::stoll(argv[2]) : poslens::training_length(model.model->config());
  const int rounds = argc > 3 ? std::stoi(argv[3]) : 3;
  const auto tokens = poslens::probe_tokens(model, 0, 0);
  options.tokens = tokens;
  // The forward runs exactly the batches the probe ran: its size is the probe's first
  // progress report, BOS is the probe's.
  int64_t batch = 0, bos = 0;
  std::vector<double> probe_s, forward_s;
  const int64_t N = static_cast<int64_t>(tokens.size()), T = options.length;
  for (int r = 0; r < rounds; ++r) {
    auto start = std::chrono::steady_clock::now();
    const auto result = poslens::run_probe(model, options, [&](int64_t done, int64_t) {
      if (batch == 0 && done > 0) batch = done;  // the first report after a batch
      return true;
    });
    probe_s.push_back(seconds_since(start));
    bos = result.bos_id;

    c10::InferenceMode guard;
    start = std::chrono::steady_clock::now();
    for (int64_t s = 0; s < N; s += batch) {
      const int64_t b = std::min(batch, N - s);
      auto ids = torch::tensor(std::vector<int64_t>(tokens.begin() + s, tokens.begin() + s + b))
                     .view({b, 1})
                     .expand({b, T})
                     .clone();
      ids.select(1, 0).fill_(bos);
      model.model->forward(ids);
    }
    forward_s.push_back(seconds_since(start));
    std::printf("round %d: probe %.3f s (%.1f samples/s), forward %.3f s (%.1f samples/s), batch %lld\n",
                r + 1, probe_s.back(), N / probe_s.back(), forward_s.back(), N / forward_s.back(),
                static_cast<long long>(batch));
  }
  const double p = median(probe_s), f = median(forward_s);
  std::printf("%s T=%lld, %lld samples: probe %.1f samples/s, forward %.1f samples/s, "
              "probe/forward time %.2f\n",
              argv[1], static_cast<long long>(T), static_cast<long long>(N), N / p, N / f, p / f);
  return 0;
}
