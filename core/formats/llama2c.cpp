// llama2.c legacy (v0) checkpoint reader: validates the header, checks the exact file size,
// memory-maps the file and exposes the weights as aliasing float32 tensors.
// Layout source: karpathy/llama2.c run.c (`read_checkpoint`, `memory_map_weights`) and
// export.py (`legacy_export`).
#include "core/formats/llama2c.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <torch/torch.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "core/base/error.h"
#include "core/base/mapped_file.h"
#include "core/base/little_endian.h"

namespace poslens {
namespace {

constexpr std::size_t kHeaderBytes = 7 * sizeof(int32_t);
constexpr int64_t kMaxField = int64_t{1} << 20;
/// First int32 of llama2.c's version-1+ exports (export.py `version1_export`): "ak42".
constexpr uint32_t kV1Magic = 0x616b3432u;

struct Header {
  int64_t dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, vocab_size = 0,
          seq_len = 0;
};

std::string header_text(const Header& h) {
  std::ostringstream s;
  s << "dim=" << h.dim << ", hidden_dim=" << h.hidden_dim << ", n_layers=" << h.n_layers
    << ", n_heads=" << h.n_heads << ", n_kv_heads=" << h.n_kv_heads
    << ", vocab_size=" << h.vocab_size << ", seq_len=" << h.seq_len;
  return s.str();
}

bool host_is_little_endian() {
  const uint16_t probe = 1;
  unsigned char first = 0;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

/// Checked uint64 arithmetic for the expected file size; on overflow the size is reported as
/// "more than 2^64 bytes".
struct Checked {
  uint64_t value = 0;
  bool overflow = false;
  Checked& add(uint64_t x) {
    if (!overflow && __builtin_add_overflow(value, x, &value)) overflow = true;
    return *this;
  }
  static uint64_t mul(uint64_t a, uint64_t b, bool& overflow) {
    uint64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) overflow = true;
    return r;
  }
};

/// Validates the header fields; throws poslens::Error naming the first bad field.
void validate_header(const std::string& path, const Header& h) {
  const std::pair<const char*, int64_t> fields[] = {
      {"dim", h.dim},           {"hidden_dim", h.hidden_dim}, {"n_layers", h.n_layers},
      {"n_heads", h.n_heads},   {"n_kv_heads", h.n_kv_heads}, {"vocab_size", h.vocab_size},
      {"seq_len", h.seq_len}};
  for (const auto& [name, raw] : fields) {
    const bool is_vocab = std::strcmp(name, "vocab_size") == 0;
    const int64_t v = is_vocab && raw < 0 ? -raw : raw;
    if (v <= 0) {
      std::ostringstream s;
      s << path << ": llama2.c header field " << name << "=" << raw << " must be "
        << (is_vocab ? "non-zero" : "positive") << " (header: " << header_text(h) << ")";
      throw Error(s.str());
    }
    if (v > kMaxField) {
      std::ostringstream s;
      s << path << ": llama2.c header field " << name << "=" << raw << " exceeds the limit "
        << kMaxField << " (not a llama2.c checkpoint? header: " << header_text(h) << ")";
      throw Error(s.str());
    }
  }
  if (h.dim % h.n_heads != 0) {
    std::ostringstream s;
    s << path << ": llama2.c header dim=" << h.dim << " is not divisible by n_heads=" << h.n_heads;
    throw Error(s.str());
  }
  if (h.n_heads % h.n_kv_heads != 0) {
    std::ostringstream s;
    s << path << ": llama2.c header n_heads=" << h.n_heads
      << " is not divisible by n_kv_heads=" << h.n_kv_heads;
    throw Error(s.str());
  }
  const int64_t d_head = h.dim / h.n_heads;
  if (d_head % 2 != 0) {
    std::ostringstream s;
    s << path << ": llama2.c header implies d_head=dim/n_heads=" << d_head
      << ", which must be even for RoPE (dim=" << h.dim << ", n_heads=" << h.n_heads << ")";
    throw Error(s.str());
  }
}

}  // namespace

struct Llama2cFile::Impl {
  std::string path;
  std::shared_ptr<const MappedFile> file;
  Llama2cHeader header;
  std::vector<TensorInfo> infos;
  std::vector<std::size_t> offsets;  // byte offset of each tensor in `infos`
  std::unordered_map<std::string, std::size_t> index;
};

Llama2cFile::Llama2cFile(const std::string& path) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.path = path;
  if (!host_is_little_endian())
    throw Error(path + ": llama2.c checkpoints are little-endian; this host is big-endian");

  // Mapping reads nothing yet; the header is validated before any tensor offset is used.
  m.file = MappedFile::open(path);
  const uint64_t file_size = m.file->size();
  if (file_size < kHeaderBytes) {
    std::ostringstream s;
    s << path << ": file has " << file_size << " bytes, shorter than the " << kHeaderBytes
      << "-byte llama2.c header";
    throw Error(s.str());
  }
  const unsigned char* raw = m.file->bytes();
  if (static_cast<uint32_t>(read_le_i32(raw)) == kV1Magic)
    throw Error(path + ": this is a llama2.c version-1+ export (magic \"ak42\"); only the legacy "
                       "v0 format of run.c is supported (export with --version 0)");
  Header h;
  h.dim = read_le_i32(raw + 0);
  h.hidden_dim = read_le_i32(raw + 4);
  h.n_layers = read_le_i32(raw + 8);
  h.n_heads = read_le_i32(raw + 12);
  h.n_kv_heads = read_le_i32(raw + 16);
  h.vocab_size = read_le_i32(raw + 20);
  h.seq_len = read_le_i32(raw + 24);
  validate_header(path, h);

  const bool shared = h.vocab_size > 0;
  const int64_t vocab = shared ? h.vocab_size : -h.vocab_size;
  const int64_t d_head = h.dim / h.n_heads;
  const int64_t kv_dim = h.dim / h.n_heads * h.n_kv_heads;
  const int64_t L = h.n_layers;

  // Tensor groups in file order (run.c memory_map_weights). Shapes are [out, in] for linears.
  // A group is one tensor, or one per layer (per_layer) stored back to back.
  struct Group {
    std::string name;  // full name, or the suffix after "layers.{L}." when per_layer
    bool per_layer;
    std::vector<int64_t> shape;
    bool exposed;  // false: stored but not offered (the RoPE tables, recomputed by the runtime)
  };
  std::vector<Group> groups = {
      {"tok_embeddings.weight", false, {vocab, h.dim}, true},
      {"attention_norm.weight", true, {h.dim}, true},
      {"attention.wq.weight", true, {h.dim, h.dim}, true},
      {"attention.wk.weight", true, {kv_dim, h.dim}, true},
      {"attention.wv.weight", true, {kv_dim, h.dim}, true},
      {"attention.wo.weight", true, {h.dim, h.dim}, true},
      {"ffn_norm.weight", true, {h.dim}, true},
      {"feed_forward.w1.weight", true, {h.hidden_dim, h.dim}, true},
      {"feed_forward.w2.weight", true, {h.dim, h.hidden_dim}, true},
      {"feed_forward.w3.weight", true, {h.hidden_dim, h.dim}, true},
      {"norm.weight", false, {h.dim}, true},
      {"freq_cis_real", false, {h.seq_len, d_head / 2}, false},
      {"freq_cis_imag", false, {h.seq_len, d_head / 2}, false},
  };
  if (!shared) groups.push_back({"output.weight", false, {vocab, h.dim}, true});

  // The expected size first, from the header alone: the table (one entry per layer) is built
  // only once the file is known to hold that many layers.
  auto tensor_bytes = [](const std::vector<int64_t>& shape, bool& overflow) {
    uint64_t bytes = sizeof(float);
    for (int64_t d : shape) bytes = Checked::mul(bytes, static_cast<uint64_t>(d), overflow);
    return bytes;
  };
  Checked expected;
  expected.add(kHeaderBytes);
  for (const Group& g : groups) {
    bool overflow = false;
    const uint64_t one = tensor_bytes(g.shape, overflow);
    const uint64_t all = g.per_layer ? Checked::mul(one, static_cast<uint64_t>(L), overflow) : one;
    if (overflow) expected.overflow = true;
    expected.add(all);
  }
  if (expected.overflow || expected.value != file_size) {
    std::ostringstream s;
    s << path << ": llama2.c header (" << header_text(h) << ") implies ";
    if (expected.overflow)
      s << "more than 2^64 bytes";
    else
      s << expected.value << " bytes";
    s << ", file has " << file_size;
    if (expected.overflow || expected.value > file_size)
      s << " (truncated?)";
    else
      s << " (" << (file_size - expected.value) << " extra bytes after the weights)";
    throw Error(s.str());
  }
  uint64_t offset = kHeaderBytes;
  for (const Group& g : groups) {
    bool overflow = false;  // cannot happen: the total was checked above
    const uint64_t bytes = tensor_bytes(g.shape, overflow);
    for (int64_t l = 0; l < (g.per_layer ? L : 1); ++l) {
      if (g.exposed) {
        std::string name = g.per_layer ? "layers." + std::to_string(l) + "." + g.name : g.name;
        m.infos.push_back({std::move(name), StoredDType::F32, g.shape});
        m.offsets.push_back(static_cast<std::size_t>(offset));
      }
      offset += bytes;
    }
  }

  for (std::size_t i = 0; i < m.infos.size(); ++i) m.index.emplace(m.infos[i].name, i);

  m.header = {h.dim, h.hidden_dim, h.n_layers, h.n_heads, h.n_kv_heads, vocab, h.seq_len, shared};
}

Llama2cFile::~Llama2cFile() = default;

const std::vector<TensorInfo>& Llama2cFile::tensors() const { return impl_->infos; }

at::Tensor Llama2cFile::load(const std::string& name) const {
  const auto it = impl_->index.find(name);
  if (it == impl_->index.end())
    throw Error(impl_->path + ": no tensor named \"" + name + "\" in this llama2.c checkpoint");
  const TensorInfo& info = impl_->infos[it->second];
  auto* data = const_cast<unsigned char*>(impl_->file->bytes()) + impl_->offsets[it->second];
  // The map is read-only: the tensor aliases it and must not be written to.
  return torch::from_blob(data, info.shape, torch::TensorOptions().dtype(torch::kFloat));
}

std::string Llama2cFile::describe() const { return impl_->path; }

const Llama2cHeader& Llama2cFile::header() const { return impl_->header; }

}  // namespace poslens
