// write_safetensors (safetensors.h): the header as JSON, then the tensors' bytes, written to a
// temporary file that is renamed only when complete, so a failure leaves no file behind.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <unordered_set>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "core/base/atomic_file.h"
#include "core/base/error.h"
#include "core/base/text.h"
#include "core/formats/safetensors.h"

namespace poslens {
namespace {

using ojson = nlohmann::ordered_json;  // keeps the tensors in the caller's order


/// Writes all of [data, data+size) to fd; throws poslens::Error on failure.
void write_all(int fd, const void* data, std::size_t size, const std::string& where) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const std::size_t chunk = std::min<std::size_t>(size, std::size_t{1} << 30);
    const ssize_t n = ::write(fd, p, chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(where + ": write failed: " + errno_text());
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

}  // namespace

void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // Check and prepare everything before creating any file.
  std::vector<at::Tensor> contiguous;
  contiguous.reserve(tensors.size());
  ojson header = ojson::object();
  if (!metadata.empty()) {
    ojson meta = ojson::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
    header["__metadata__"] = std::move(meta);
  }
  std::unordered_set<std::string> seen;
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    const std::string where = path + ": tensor " + quoted(name);
    if (name.empty() || name == "__metadata__") throw Error(where + ": reserved or empty name");
    if (!seen.insert(name).second) throw Error(where + ": given twice");
    if (!tensor.defined()) throw Error(where + ": undefined tensor");
    if (!tensor.device().is_cpu()) {
      throw Error(where + ": on " + tensor.device().str() + ", expected a CPU tensor");
    }
    StoredDType dtype{};
    if (!stored_dtype_of(tensor.scalar_type(), &dtype)) {
      throw Error(where + ": dtype " + std::string(c10::toString(tensor.scalar_type())) +
                  " cannot be stored in safetensors (supported: " + kStoredDTypeNames + ")");
    }
    at::Tensor c = tensor.contiguous();
    const std::uint64_t nbytes = static_cast<std::uint64_t>(c.numel()) * element_size(dtype);
    ojson entry = ojson::object();
    entry["dtype"] = to_string(dtype);
    entry["shape"] = c.sizes().vec();
    entry["data_offsets"] = {offset, offset + nbytes};
    header[name] = std::move(entry);
    offset += nbytes;
    contiguous.push_back(std::move(c));
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const ojson::exception& e) {  // e.g. a name that is not valid UTF-8
    throw Error(path + ": cannot encode the header: " + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // pad so the data buffer starts 8-aligned
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(text.size() >> (8 * i));

  AtomicOutput out(path);
  const std::string& tmp = out.path();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(tmp + ": cannot create: " + errno_text());
  try {
    write_all(fd, length, sizeof length, tmp);
    write_all(fd, text.data(), text.size(), tmp);
    for (const at::Tensor& c : contiguous) {
      const std::size_t nbytes = static_cast<std::size_t>(c.numel()) * c.element_size();
      if (nbytes > 0) write_all(fd, c.data_ptr(), nbytes, tmp);
    }
    const int rc = ::close(fd);
    fd = -1;  // closed even when close reports an error
    if (rc != 0) throw Error(tmp + ": close failed: " + errno_text());
  } catch (...) {
    if (fd >= 0) ::close(fd);
    throw;
  }
  out.commit();
}

}  // namespace poslens
