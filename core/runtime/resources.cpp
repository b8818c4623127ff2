#include "core/runtime/resources.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/base/error.h"
#include "core/runtime/attention.h"
#include "core/runtime/hook_sink.h"

namespace poslens {

int64_t forward_working_bytes(const ModelConfig& c, int64_t batch, int64_t T, c10::ScalarType dtype) {
  const int64_t width = static_cast<int64_t>(c10::elementSize(dtype));
  // The widest layer's heads (Gemma 4's global layers are wider than its local ones).
  const int64_t d_head = std::max(c.widest_head(), c.value_head_dim()), n_kv = c.most_kv_heads();
  const int64_t qkv = (c.n_heads + 2 * n_kv) * d_head;
  // Residual, normed input, attention output and z (4·d_model); q/k/v and the attention's
  // contiguous copies (2·qkv); float32 norms. The MLP's gate, up and product (3·d_mlp) run
  // over chunks of positions of at most kMlpChunkBytes each.
  const int64_t per_position = (4 * c.d_model + 2 * qkv) * width + 2 * c.d_model * 4;
  const int64_t d_mlp = c.widest_mlp();  // Llama 4 Maverick's dense layers are wider
  const int64_t mlp = 3 * std::min(batch * T * d_mlp * width, kMlpChunkBytes + batch * d_mlp * width);
  const int64_t blocks = 4 * kAttentionBlockBytes;
  const int64_t logits_chunk = std::max<int64_t>(int64_t{64} << 20, batch * c.vocab_size * 4);
  return batch * T * per_position + mlp + blocks + logits_chunk;
}

int64_t hook_bytes(const ModelConfig& c, const HookPoint& point, int64_t batch, int64_t T,
                   int64_t heads, int64_t pool_stride) {
  if (is_map_hook(point.kind)) {
    const int64_t side = pool_stride > 1 ? (T + pool_stride - 1) / pool_stride : T;
    return batch * (heads < 0 ? c.n_heads : heads) * side * side * 4;
  }
  int64_t width = c.d_model;
  // A layer's own head sizes where the layers differ (Gemma 4).
  const ModelConfig layer = point.layer >= 0 && point.layer < c.n_layers && c.per_layer_schemes() &&
                                    point.stack == HookStack::Blocks
                                ? c.layer_config(point.layer)
                                : ModelConfig();
  const ModelConfig& lc = layer.n_layers > 0 ? layer : c;
  switch (point.kind) {
    case HookKind::Q: case HookKind::RotQ: width = lc.n_heads * lc.d_head; break;
    case HookKind::Z: width = lc.n_heads * lc.value_head_dim(); break;
    case HookKind::K: case HookKind::RotK: width = lc.n_kv_heads * lc.d_head; break;
    case HookKind::V: width = lc.n_kv_heads * lc.value_head_dim(); break;
    case HookKind::Logits: width = c.vocab_size; break;
    default: break;
  }
  return batch * T * width * 4;
}

int64_t free_disk_bytes(const std::string& path) {
  auto folder = std::filesystem::path(path).parent_path();
  if (folder.empty()) folder = ".";
  struct statvfs s {};
  if (::statvfs(folder.c_str(), &s) != 0) return -1;
  return static_cast<int64_t>(s.f_bavail) * static_cast<int64_t>(s.f_frsize);
}

int64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return -1;
}

std::string gigabytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GB", static_cast<double>(bytes) / 1e9);
  return text;
}

void check_resources(const std::string& what, const std::string& output_path, int64_t output_bytes,
                     int64_t memory_bytes) {
  const int64_t disk = free_disk_bytes(output_path);
  if (disk >= 0 && output_bytes > disk)
    throw Error(what + ": the output needs up to " + gigabytes(output_bytes) + " but only " +
                gigabytes(disk) + " are free where '" + output_path + "' goes; select fewer " +
                "hooks or heads (--capture, --heads), pool the maps (--pool N) or write elsewhere");
  const int64_t memory = available_memory_bytes();
  if (memory >= 0 && memory_bytes > memory)
    throw Error(what + ": needs about " + gigabytes(memory_bytes) + " of memory but " +
                gigabytes(memory) + " are available; use fewer tokens (or a GPU)");
}

}  // namespace poslens
