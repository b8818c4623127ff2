// Reader: poslens::Llama2cFile (core/formats/llama2c.cpp) - a llama2.c legacy (v0) `.bin`
// checkpoint: the 7-int32 header, the exact file size it implies, the memory-mapped weights;
// then what the loader does next with the header alone (llama2c_config, ModelConfig::validate,
// the llama2.c weight table and load_weights into float32 CPU tensors).
// Input: the whole file. The reader only takes a path: every input is written to
// /dev/shm/poslens-fuzz-<pid>/model.bin.
// Expected: poslens::Error. Findings: any other exception, a sanitizer report (UBSan: integer
// overflow in the size arithmetic), a fault while reading an accepted tensor, or tensors that
// need more bytes than the file has.
#include <cstdint>
#include <string>

#include "core/formats/llama2c.h"
#include "core/models/architectures.h"
#include "core/models/weight_table.h"
#include "fuzz_common.h"

using namespace poslens;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_path("model.bin");
  fuzz::write_file(path, data, size);
  fuzz::refuse([&] {
    const Llama2cFile file(path);
    uint64_t total = 28;  // the header
    for (const TensorInfo& info : file.tensors()) {
      const at::Tensor t = file.load(info.name);
      if (t.sizes().vec() != info.shape) fuzz::finding("tensor " + info.name + ": shape differs from tensors()");
      total += static_cast<uint64_t>(t.numel()) * 4;
      if (total > size) fuzz::finding("accepted tensors need more bytes than the file has");
      fuzz::keep(fuzz::touch_tensor(t));
    }
    fuzz::refuse([&] { file.load("freq_cis_real"); });  // stored but not offered
    const ModelConfig config = llama2c_config(file.header());
    config.validate();
    fuzz::keep(config.to_json());
    const ModelWeights weights =
        load_weights(file, weight_table_for(config, file), config, c10::kCPU, at::kFloat);
    fuzz::keep(weights);
  });
  return 0;
}
