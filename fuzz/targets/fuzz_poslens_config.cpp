// Reader: poslens::poslens_config_from_text (core/models/poslens_model.cpp, arch_poslens.cpp,
// the position components' recipes in core/position/) - the config.json of a PosLens-format
// model (docs/poslens-format.md), also what `poslens-cli train` reads as a model config.
// After an accepted config: ModelConfig::validate, every component's recipe (as the loader
// checks them), the PosLens weight table, and the round trip poslens_config_json -> reader
// (documented: "exactly the keys the reader accepts, so it loads again to an equal config").
// Input: the JSON text (no file needed).
// Expected: poslens::Error. Findings: any other exception (e.g. nlohmann::json type_error),
// a sanitizer report, a config that does not read back equal, a timeout.
#include <cstdint>
#include <string>

#include "core/models/hf_config.h"
#include "core/models/poslens_model.h"
#include "fuzz_common.h"

using namespace poslens;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ModelConfig config;
  if (!fuzz::refuse([&] { config = poslens_config_from_text(text, "config.json"); })) return 0;
  const bool valid = fuzz::refuse([&] {
    config.validate();
    for (const auto& spec : config.pe_components) component_recipe(spec, config.position_context());
  });
  if (!valid) return 0;
  fuzz::keep(arch::poslens_table(config).rules.size());
  const std::string written = poslens_config_json(config);
  ModelConfig again;
  if (!fuzz::refuse([&] { again = poslens_config_from_text(written, "written config.json"); }))
    fuzz::finding("poslens_config_json output does not read back: " + written);
  if (again.to_json() != config.to_json())
    fuzz::finding("config differs after a round trip:\n" + config.to_json() + "\n" + again.to_json());
  return 0;
}
