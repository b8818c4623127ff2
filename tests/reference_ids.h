#pragma once
// The token ids a committed HF reference was made on: tools/make_arch_reference*.py save them as
// `input_ids` in tests/data/models/NAME/reference.safetensors beside HF's logits and patterns.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "core/formats/safetensors.h"

namespace poslens::test {

/// `input_ids` of `dir`/reference.safetensors ([1, T] int64 as written), flattened to T ids.
/// Throws poslens::Error when the file or the tensor is missing.
inline std::vector<int64_t> reference_ids(const std::string& dir) {
  const SafetensorsFile ref(dir + "/reference.safetensors");
  const auto ids = ref.load("input_ids").to(at::kLong).flatten().contiguous();
  return {ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel()};
}

}  // namespace poslens::test
