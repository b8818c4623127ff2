// Reader: poslens::read_hf_config (core/models/architectures.cpp and every arch_*.cpp, with
// model_config.cpp, json_fields.cpp and the position components' parameter checks) - the
// `config.json` of a checkpoint folder. The whole JSON goes to the architecture dispatcher, so
// `architectures[0]` / `model_type` (or a TransformerLens config's keys) come from the input
// and every architecture is reachable: Llama, Mistral, Qwen2, GPT-2, GPT-NeoX, Phi, Gemma, OLMo,
// BLOOM, MPT, BERT, RoBERTa, T5, TransformerLens and PosLens.
// After an accepted config: ModelConfig::to_json (written into every HDF5 file) and the
// architecture's weight table (weight_table_for, with an empty tensor source).
// Input: the JSON text. The reader only takes a path: it is written to
// /dev/shm/poslens-fuzz-<pid>/config.json.
// Expected: poslens::Error naming the file and key. Findings: any other exception (a
// nlohmann::json type_error from j.value(key, default) on a key of the wrong type, ...), a
// sanitizer report (UBSan: signed overflow in size arithmetic), an accepted config that
// validate() refuses, a timeout.
#include <cstdint>
#include <string>
#include <vector>

#include "core/models/architectures.h"
#include "fuzz_common.h"

using namespace poslens;

namespace {

class NoTensors : public TensorSource {
 public:
  const std::vector<TensorInfo>& tensors() const override { return none_; }
  at::Tensor load(const std::string& name) const override { throw Error("no tensor " + name); }
  std::string describe() const override { return "no tensors"; }

 private:
  std::vector<TensorInfo> none_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_path("config.json");
  fuzz::write_file(path, data, size);
  fuzz::refuse([&] {
    const ModelConfig config = read_hf_config(path);
    if (!fuzz::refuse([&] { config.validate(); }))
      fuzz::finding("read_hf_config accepted a config that validate() refuses");
    fuzz::keep(config.to_json());
    const WeightTable table = weight_table_for(config, NoTensors());
    fuzz::keep(table.rules.size());
  });
  return 0;
}
