// Reader: poslens::SafetensorsFile (core/formats/safetensors.cpp) - the 8-byte header length,
// the JSON header and the memory-mapped data buffer of a `model.safetensors`.
// Input: the whole file. The reader only takes a path, so every input is written to
// /dev/shm/poslens-fuzz-<pid>/model.safetensors first.
// Expected: poslens::Error for any damaged file. Findings: any other exception, a sanitizer
// report, a fault while reading an accepted tensor's bytes, or an accepted header that breaks
// the documented invariants (every range inside the data buffer, no overlaps, numel x element
// size == range length, tensors() in header order and loadable by name).
#include <cstdint>
#include <string>

#include "core/formats/safetensors.h"
#include "fuzz_common.h"

using namespace poslens;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_path("model.safetensors");
  fuzz::write_file(path, data, size);
  fuzz::refuse([&] {
    const SafetensorsFile file(path);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];  // accepted: size >= 8 + n
    const uint64_t data_bytes = size - 8 - n;
    uint64_t total = 0;
    for (const TensorInfo& info : file.tensors()) {
      const at::Tensor t = file.load(info.name);
      if (t.sizes().vec() != info.shape || t.scalar_type() != scalar_type(info.dtype))
        fuzz::finding("tensor " + info.name + ": load() disagrees with tensors()");
      const uint64_t nbytes = static_cast<uint64_t>(t.numel()) * element_size(info.dtype);
      total += nbytes;
      if (nbytes > data_bytes || total > data_bytes)  // non-overlapping ranges inside the buffer
        fuzz::finding("tensor " + info.name + ": accepted tensors need more bytes than the data buffer holds");
      fuzz::keep(fuzz::touch_tensor(t));
      file.release(info.name);
    }
    fuzz::keep(file.metadata().size());
    // An unknown name is a refusal, never anything else.
    fuzz::refuse([&] { file.load("\x01 no such tensor"); });
  });
  return 0;
}
