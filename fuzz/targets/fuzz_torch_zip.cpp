// Reader: poslens::TorchZipFile (core/formats/torch_zip.cpp) - a torch.save zip archive
// (`pytorch_model.bin`, `model.pt`, nanoGPT `ckpt.pt`): LibTorch's PyTorchStreamReader for the
// zip, the restricted unpickler for data.pkl, and the checks of every tensor view against its
// storage; then what the checkpoint loader reads from a nanoGPT archive (is_nanogpt_checkpoint,
// nanogpt_config in core/models/arch_nanogpt.cpp).
// Input, two modes (so that the fuzzer reaches the view checks without having to keep a zip
// directory consistent):
//  - starts with "PK": the whole archive, written as is;
//  - anything else: the input is data.pkl. The harness unpickles it once itself to learn the
//    storage keys and numels, and writes (with LibTorch's PyTorchStreamWriter) an archive of
//    data.pkl plus one data/<key> record per storage holding numel x element size bytes (at
//    most 1 MiB each, 4 MiB in all: a larger storage gets a shorter record, which load()
//    must refuse; storages past 4 MiB get none, which the constructor must refuse).
// The reader only takes a path: the archive goes to /dev/shm/poslens-fuzz-<pid>/model.pt.
// Expected: poslens::Error. Findings: any other exception (c10::Error must be turned into
// poslens::Error by the reader), a sanitizer report (touch_tensor reads every element an
// accepted view reaches from instrumented code: a view past its storage record is a
// heap-buffer-overflow), or load() disagreeing with tensors().
#include <cstdint>
#include <map>
#include <string>

#include <caffe2/serialize/inline_container.h>

#include "core/formats/restricted_unpickler.h"
#include "core/formats/torch_zip.h"
#include "core/models/architectures.h"
#include "fuzz_common.h"

using namespace poslens;

namespace {

constexpr uint64_t kMaxRecordBytes = uint64_t{1} << 20;
/// All records together: storages past it get no record (the reader must refuse the tensor).
constexpr uint64_t kMaxArchiveBytes = uint64_t{4} << 20;

/// The archive for a data.pkl: storage records sized from the pickle's own persistent ids.
std::string archive_around(const uint8_t* pkl, size_t size) {
  std::map<std::string, uint64_t> records;  // key -> bytes
  uint64_t total = 0;
  fuzz::refuse([&] {
    const pickle::Unpickled parsed = pickle::unpickle_restricted(pkl, size, "data.pkl");
    for (const auto& v : parsed.values) {
      if (v->kind != pickle::Value::Kind::Storage) continue;
      const std::string& key = v->text;
      if (key.empty() || key.find('/') != std::string::npos || key.find('\0') != std::string::npos ||
          key.size() > 64)
        continue;
      uint64_t bytes = static_cast<uint64_t>(v->numel);
      bytes = bytes > kMaxRecordBytes ? kMaxRecordBytes : bytes * element_size(v->dtype);
      if (bytes > kMaxRecordBytes) bytes = kMaxRecordBytes;
      if (records.count(key) == 0 && total + bytes <= kMaxArchiveBytes) {
        records.emplace(key, bytes);
        total += bytes;
      }
    }
  });
  std::string zip;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* p, size_t n) {
    zip.append(static_cast<const char*>(p), n);
    return n;
  });
  writer.writeRecord("data.pkl", pkl, size);
  std::string bytes;
  for (const auto& [key, n] : records) {
    bytes.assign(static_cast<size_t>(n), '\0');
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + 1);
    writer.writeRecord("data/" + key, bytes.data(), bytes.size());
  }
  writer.writeEndOfFile();
  return zip;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_path("model.pt");
  if (size >= 2 && data[0] == 'P' && data[1] == 'K')
    fuzz::write_file(path, data, size);
  else
    fuzz::write_file(path, archive_around(data, size));

  fuzz::refuse([&] {
    const TorchZipFile zip(path);
    for (const TensorInfo& info : zip.tensors()) {
      fuzz::refuse([&] {  // a record of the wrong size is refused here
        const at::Tensor t = zip.load(info.name);
        if (t.sizes().vec() != info.shape || t.scalar_type() != scalar_type(info.dtype))
          fuzz::finding("tensor " + info.name + ": load() disagrees with tensors()");
        fuzz::keep(fuzz::touch_tensor(t));
      });
    }
    fuzz::refuse([&] { zip.load(""); });
    for (const auto& [name, value] : zip.scalars()) fuzz::keep(value.type());
    if (is_nanogpt_checkpoint(zip)) {
      const ModelConfig config = nanogpt_config(zip);
      config.validate();
      fuzz::keep(config.to_json());
    }
  });
  return 0;
}
