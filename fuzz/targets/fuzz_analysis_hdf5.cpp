// Reader: poslens::Hdf5Reader (core/formats/hdf5_reader.cpp) - the analysis HDF5 files
// (docs/hdf5-layout.md) that the GUI opens with File > Open analysis... and `poslens-cli merge`
// reads back. The GUI's entry point, open_analysis_job (app/gui/jobs/open_analysis_job.cpp), is Qt
// code; this target makes the same Hdf5Reader calls it makes: the root attributes
// (poslens_version, checkpoint, weights_sha256, model_config), exists() of each analysis group
// it dispatches on, then - instead of one fixed layout per analysis kind - every object found by
// walking the file (children, at most 8 levels and 256 objects) is read every way the GUI reads
// one: shape, read, read_slice at {0} and {0, 0}, read_strings, and the string, string-list
// and integer attributes the GUI asks for.
// Input: the whole file. The reader only takes a path: every input is written to
// /dev/shm/poslens-fuzz-<pid>/analysis.h5.
// Expected: poslens::Error. Findings: any other exception (an H5::Exception that escaped
// hdf5::call, a c10::Error from a tensor of a shape the reader did not check), a sanitizer
// report, a crash inside libhdf5 on a hostile file (uninstrumented: SEGV/abort), an
// out-of-memory (the reader allows 1 GiB per dataset: libFuzzer's -rss_limit_mb=2048 counts it
// if it is really allocated), a timeout.
#include <cstdint>
#include <string>
#include <vector>

#include "core/formats/hdf5_reader.h"
#include "fuzz_common.h"

using namespace poslens;

namespace {

const char* const kGroups[] = {"/analysis/probe",   "/analysis/compare",     "/analysis/frequencies",
                               "/analysis/position_map", "/captures",        "/analysis/frequency_usage",
                               "/analysis/massive_activations", "/analysis/divergence", "/analysis/length_loss",
                               "/analysis/position_offset", "/analysis/heinsen", "/analysis/heads/values",
                               "/tokens/text",      "/tokens/ids",           "/items"};
const char* const kStringAttributes[] = {"poslens_version", "checkpoint", "weights_sha256", "model_config",
                                         "pairing", "explanation", "second_checkpoint"};
const char* const kIntAttributes[] = {"L", "T", "n_samples", "kept_components", "layer", "head", "offset",
                                      "source_length"};
const char* const kListAttributes[] = {"heads", "methods", "dims"};

void read_object(const Hdf5Reader& file, const std::string& object) {
  fuzz::refuse([&] { fuzz::keep(file.exists(object)); });
  fuzz::refuse([&] {
    const std::vector<int64_t> shape = file.shape(object);
    for (const int64_t d : shape)
      if (d < 0) fuzz::finding("negative dimension in the shape of " + object);
  });
  fuzz::refuse([&] { fuzz::keep(fuzz::touch_tensor(file.read(object), 4096)); });
  fuzz::refuse([&] { fuzz::keep(fuzz::touch_tensor(file.read_slice(object, {0}), 4096)); });
  fuzz::refuse([&] { fuzz::keep(fuzz::touch_tensor(file.read_slice(object, {0, 0}), 4096)); });
  fuzz::refuse([&] { fuzz::keep(file.read_strings(object)); });
  for (const char* name : kStringAttributes) fuzz::refuse([&] { fuzz::keep(file.string_attribute(object, name)); });
  for (const char* name : kIntAttributes) fuzz::refuse([&] { fuzz::keep(file.int_attribute(object, name, -7)); });
  for (const char* name : kListAttributes) fuzz::refuse([&] { fuzz::keep(file.string_list_attribute(object, name)); });
}

void walk(const Hdf5Reader& file, const std::string& group, int depth, int* budget) {
  std::vector<std::string> names;
  if (!fuzz::refuse([&] { names = file.children(group); })) return;
  for (const std::string& name : names) {
    if (--*budget < 0) return;
    const std::string object = (group == "/" ? "/" : group + "/") + name;
    read_object(file, object);
    if (depth < 8) walk(file, object, depth + 1, budget);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_path("analysis.h5");
  fuzz::write_file(path, data, size);
  fuzz::refuse([&] {
    const Hdf5Reader file(path);
    read_object(file, "/");
    for (const char* group : kGroups) fuzz::keep(file.exists(group));
    for (const char* odd : {"", "/.", "//", "/analysis//probe", "/tokens/text/x"}) fuzz::keep(file.exists(odd));
    int budget = 256;
    walk(file, "/", 0, &budget);
  });
  return 0;
}
