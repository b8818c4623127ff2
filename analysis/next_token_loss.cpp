#include "analysis/next_token_loss.h"

#include <torch/torch.h>

#include <algorithm>

namespace poslens {

void NextTokenLoss::tensor(const HookPoint&, const at::Tensor& logits, int64_t pos_begin) {
  // Positions [pos_begin, pos_begin + n) predict targets [pos_begin, …); the last has none.
  const int64_t n = std::min(logits.size(1), targets_.size(0) - pos_begin);
  if (n <= 0) return;
  const auto log_p = torch::log_softmax(logits[0].narrow(0, 0, n).to(torch::kFloat32), -1);
  const auto target = targets_.narrow(0, pos_begin, n).to(log_p.device()).unsqueeze(1);
  sums_.narrow(0, pos_begin, n) -= log_p.gather(1, target).squeeze(1).to(torch::kCPU, torch::kDouble);
}

}  // namespace poslens
