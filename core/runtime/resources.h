#pragma once
// What a job will need before it starts (issue: "the CLI prints what it will write and
// refuses an output that cannot fit the free disk or an estimated memory beyond what the
// machine has"): estimates of a forward pass's working memory and of hook outputs, and what
// this machine has free.
#include <cstdint>
#include <string>

#include <c10/core/ScalarType.h>

#include "core/models/model_config.h"
#include "core/runtime/hook_points.h"

namespace poslens {

/// Bytes a forward pass of `config` over `batch` sequences of `T` positions holds at its peak
/// beyond the weights, in `dtype` (the compute dtype): one layer's activations (residual,
/// q/k/v and their contiguous copies, the MLP's three [T, d_mlp] tensors), the attention
/// blocks (kAttentionBlockBytes, a few alive) and a chunk of logits. An estimate (±30 %).
int64_t forward_working_bytes(const ModelConfig& config, int64_t batch, int64_t T,
                              c10::ScalarType dtype);

/// Float32 bytes of hook `point` for `batch` × `T` positions; map hooks for `heads` heads (−1:
/// all) and, when `pool_stride` > 1, max-pooled to ceil(T / stride)² cells.
int64_t hook_bytes(const ModelConfig& config, const HookPoint& point, int64_t batch, int64_t T,
                   int64_t heads = -1, int64_t pool_stride = 1);

/// Bytes free on the file system holding `path`'s folder; −1 when unknown.
int64_t free_disk_bytes(const std::string& path);
/// MemAvailable of /proc/meminfo in bytes; −1 when unknown.
int64_t available_memory_bytes();
/// "1.23 GB" (GB = 10⁹ bytes: what `df -H` and file managers show).
std::string gigabytes(int64_t bytes);

/// Prints nothing; throws poslens::Error saying what does not fit, with the numbers, when
/// `output_bytes` exceed the free disk at `output_path` or `memory_bytes` the available
/// memory (unknown free space is not checked). `what` names the job ("run", "position-map").
void check_resources(const std::string& what, const std::string& output_path, int64_t output_bytes,
                     int64_t memory_bytes);

}  // namespace poslens
