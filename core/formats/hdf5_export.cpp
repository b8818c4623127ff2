// HDF5 export of captures (layout: docs/hdf5-layout.md). Written to a temporary file in the
// target folder and renamed onto the target only once complete and closed.
#include "core/formats/hdf5_export.h"

#include <unistd.h>

#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <cstdint>
#include <filesystem>
#include <set>
#include <sstream>
#include <system_error>

#include "core/base/atomic_file.h"
#include "core/base/error.h"
#include "core/base/shape_text.h"
#include "core/formats/hdf5_call.h"

namespace poslens {
namespace {

namespace fs = std::filesystem;

/// Datasets bigger than this are chunked and gzip-compressed (level 1).
constexpr std::uint64_t kCompressAbove = std::uint64_t{1} << 20;  // 1 MiB
/// Target size of one chunk: one attention row block is read without touching the rest.
constexpr std::uint64_t kChunkTarget = std::uint64_t{1} << 20;    // 1 MiB


/// The components of an absolute HDF5 path ("/a/b/c" -> a, b, c).
std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream in(path);
  for (std::string part; std::getline(in, part, '/');)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

/// Exporter state for one call: the target path (for messages) and the file being written.
class Writer {
 public:
  explicit Writer(std::string path) : path_(std::move(path)) {}

  /// Runs one HDF5 operation; an H5::Exception becomes a poslens::Error naming the path, the
  /// operation, the failing HDF5 function and the innermost message of HDF5's error stack.
  /// `f` must hold a single HDF5 call, so that no HDF5 object is destroyed (which would clear
  /// the error stack) between the failure and the catch.
  template <typename F>
  auto op(const std::string& what, F&& f) -> decltype(f()) {
    return hdf5::call("HDF5 export to '" + path_ + "'", what, std::forward<F>(f));
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("HDF5 export to '" + path_ + "': " + what);
  }


  /// Scalar variable-length UTF-8 string attribute on `obj`.
  void string_attribute(H5::H5Object& obj, const std::string& where, const std::string& name,
                        const std::string& value) {
    const H5::StrType type = hdf5::utf8_string_type();
    const H5::DataSpace scalar(H5S_SCALAR);
    H5::Attribute attr = op("creating attribute '" + name + "' on " + where,
                            [&] { return obj.createAttribute(name, type, scalar); });
    const char* ptr = value.c_str();
    op("writing attribute '" + name + "' on " + where, [&] { attr.write(type, &ptr); });
  }

  /// 1-D variable-length UTF-8 string attribute (h5py reads it as an array of str).
  void string_list_attribute(H5::H5Object& obj, const std::string& where,
                             const std::string& name, const std::vector<std::string>& values) {
    const H5::StrType type = hdf5::utf8_string_type();
    const hsize_t n = values.size();
    const H5::DataSpace space(1, &n);
    H5::Attribute attr = op("creating attribute '" + name + "' on " + where,
                            [&] { return obj.createAttribute(name, type, space); });
    std::vector<const char*> ptrs;
    ptrs.reserve(values.size());
    for (const auto& v : values) ptrs.push_back(v.c_str());
    if (!ptrs.empty())
      op("writing attribute '" + name + "' on " + where, [&] { attr.write(type, ptrs.data()); });
  }

  /// Chunking + gzip for datasets over kCompressAbove bytes; none for small or empty ones.
  H5::DSetCreatPropList creation_props(const std::vector<hsize_t>& dims, std::uint64_t elem_size) {
    H5::DSetCreatPropList props;
    std::uint64_t count = 1;
    for (hsize_t d : dims) count *= d;
    if (dims.empty() || count == 0 || count * elem_size <= kCompressAbove) return props;
    // Halve the leading dimensions first (batch, head, then query rows) until a chunk is
    // about kChunkTarget bytes: a [q_pos, k_pos] slice of one head stays in few chunks.
    std::vector<hsize_t> chunk = dims;
    std::uint64_t bytes = count * elem_size;
    for (std::size_t i = 0; i < chunk.size() && bytes > kChunkTarget;) {
      if (chunk[i] <= 1) {
        ++i;
        continue;
      }
      const hsize_t half = (chunk[i] + 1) / 2;
      bytes = bytes / chunk[i] * half;
      chunk[i] = half;
    }
    op("setting the chunk shape",
       [&] { props.setChunk(static_cast<int>(chunk.size()), chunk.data()); });
    if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0)
      op("enabling gzip compression", [&] { props.setDeflate(1); });
    return props;
  }

  /// Streamed datasets: chunks of whole trailing rows (~kChunkTarget bytes, a power of two of
  /// rows), so a block of query rows fills whole chunks; contiguous when small. `fill` is what
  /// unwritten entries read as.
  H5::DSetCreatPropList streamed_props(const std::vector<hsize_t>& dims, float fill) {
    H5::DSetCreatPropList props;
    op("setting the fill value", [&] { props.setFillValue(H5::PredType::NATIVE_FLOAT, &fill); });
    std::uint64_t count = 1;
    for (hsize_t d : dims) count *= d;
    if (dims.empty() || count == 0 || count * 4 <= kCompressAbove) return props;
    std::vector<hsize_t> chunk(dims.size(), 1);
    chunk.back() = dims.back();
    if (dims.size() >= 2) {
      hsize_t rows = 1;
      while (rows * 2 <= dims[dims.size() - 2] && rows * 2 * dims.back() * 4 <= kChunkTarget) rows *= 2;
      chunk[dims.size() - 2] = rows;
    }
    op("setting the chunk shape",
       [&] { props.setChunk(static_cast<int>(chunk.size()), chunk.data()); });
    if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0)
      op("enabling gzip compression", [&] { props.setDeflate(1); });
    return props;
  }

  /// The file type and in-memory type of `t`, and `t` converted to match (contiguous).
  static std::pair<H5::PredType, at::Tensor> stored_form(const at::Tensor& t) {
    switch (t.scalar_type()) {
      case torch::kDouble: return {H5::PredType::IEEE_F64LE, t.contiguous()};
      case torch::kLong: return {H5::PredType::STD_I64LE, t.contiguous()};
      case torch::kBool: return {H5::PredType::STD_U8LE, t.to(torch::kUInt8).contiguous()};
      default:
        if (c10::isIntegralType(t.scalar_type(), false))
          return {H5::PredType::STD_I64LE, t.to(torch::kLong).contiguous()};
        return {H5::PredType::IEEE_F32LE, t.to(torch::kFloat).contiguous()};
    }
  }

  static const H5::PredType& native_type(c10::ScalarType type) {
    switch (type) {
      case torch::kDouble: return H5::PredType::NATIVE_DOUBLE;
      case torch::kLong: return H5::PredType::NATIVE_INT64;
      case torch::kUInt8: return H5::PredType::NATIVE_UINT8;
      default: return H5::PredType::NATIVE_FLOAT;
    }
  }

  /// Dataset `name` in `group` holding `tensor` (stored_form's type), with a "dims" attribute.
  H5::DataSet write_tensor(H5::Group& group, const std::string& name, const std::string& where,
                           const at::Tensor& tensor, const std::vector<std::string>& dims_names) {
    const auto [file_type, data] = stored_form(tensor);
    std::vector<hsize_t> dims;
    for (int64_t d = 0; d < data.dim(); ++d) dims.push_back(static_cast<hsize_t>(data.size(d)));
    const H5::DataSpace space(static_cast<int>(dims.size()), dims.data());
    const H5::DSetCreatPropList props = creation_props(dims, data.element_size());
    H5::DataSet ds = op("creating dataset " + where,
                        [&] { return group.createDataSet(name, file_type, space, props); });
    if (data.numel() > 0)
      op("writing dataset " + where,
         [&] { ds.write(data.data_ptr(), native_type(data.scalar_type())); });
    string_list_attribute(ds, where, "dims", dims_names);
    return ds;
  }

  /// 1-D variable-length UTF-8 string dataset.
  H5::DataSet write_strings(H5::Group& group, const std::string& name, const std::string& where,
                            const std::vector<std::string>& values,
                            const std::vector<std::string>& dims_names) {
    const H5::StrType type = hdf5::utf8_string_type();
    const hsize_t n = values.size();
    const H5::DataSpace space(1, &n);
    H5::DataSet ds = op("creating dataset " + where,
                        [&] { return group.createDataSet(name, type, space); });
    std::vector<const char*> ptrs;
    for (const auto& v : values) ptrs.push_back(v.c_str());
    if (!ptrs.empty()) op("writing dataset " + where, [&] { ds.write(ptrs.data(), type); });
    string_list_attribute(ds, where, "dims", dims_names);
    return ds;
  }

  void attribute(H5::H5Object& obj, const std::string& where, const Hdf5Attribute& a) {
    if (const auto* text = std::get_if<std::string>(&a.value)) {
      string_attribute(obj, where, a.name, *text);
      return;
    }
    if (const auto* list = std::get_if<std::vector<std::string>>(&a.value)) {
      string_list_attribute(obj, where, a.name, *list);
      return;
    }
    if (const auto* ints = std::get_if<std::vector<int64_t>>(&a.value)) {
      const hsize_t n = ints->size();
      const H5::DataSpace space(1, &n);
      H5::Attribute attr = op("creating attribute '" + a.name + "' on " + where, [&] {
        return obj.createAttribute(a.name, H5::PredType::STD_I64LE, space);
      });
      if (n > 0)
        op("writing attribute '" + a.name + "' on " + where,
           [&] { attr.write(H5::PredType::NATIVE_INT64, ints->data()); });
      return;
    }
    const H5::DataSpace scalar(H5S_SCALAR);
    const bool is_double = std::holds_alternative<double>(a.value);
    const H5::PredType& file_type = is_double ? H5::PredType::IEEE_F64LE : H5::PredType::STD_I64LE;
    H5::Attribute attr = op("creating attribute '" + a.name + "' on " + where,
                            [&] { return obj.createAttribute(a.name, file_type, scalar); });
    if (is_double) {
      const double v = std::get<double>(a.value);
      op("writing attribute '" + a.name + "' on " + where,
         [&] { attr.write(H5::PredType::NATIVE_DOUBLE, &v); });
    } else {
      const int64_t v = std::get<int64_t>(a.value);
      op("writing attribute '" + a.name + "' on " + where,
         [&] { attr.write(H5::PredType::NATIVE_INT64, &v); });
    }
  }

  /// The group at absolute `group_path` ("/a/b"), created with its parents where missing.
  H5::Group group_at(H5::H5File& file, const std::string& group_path) {
    H5::Group group = op("opening group /", [&] { return file.openGroup("/"); });
    std::string sofar;
    for (const auto& part : split_path(group_path)) {
      sofar += "/" + part;
      const bool exists = op("looking up " + sofar, [&] { return group.nameExists(part); });
      group = exists ? op("opening group " + sofar, [&] { return group.openGroup(part); })
                     : op("creating group " + sofar, [&] { return group.createGroup(part); });
    }
    return group;
  }

  void write_tokens(H5::Group& group, const at::Tensor& ids,
                    const std::vector<std::string>& text) {
    const at::Tensor data = ids.contiguous();
    const hsize_t dims[2] = {static_cast<hsize_t>(data.size(0)),
                             static_cast<hsize_t>(data.size(1))};
    const H5::DataSpace space(2, dims);
    H5::DataSet id_ds = op("creating dataset /tokens/ids", [&] {
      return group.createDataSet("ids", H5::PredType::STD_I64LE, space);
    });
    if (data.numel() > 0)
      op("writing dataset /tokens/ids",
         [&] { id_ds.write(data.data_ptr<int64_t>(), H5::PredType::NATIVE_INT64); });
    string_list_attribute(id_ds, "/tokens/ids", "dims", {"batch", "pos"});

    const H5::StrType type = hdf5::utf8_string_type();
    H5::DataSet text_ds = op("creating dataset /tokens/text",
                             [&] { return group.createDataSet("text", type, space); });
    std::vector<const char*> ptrs;
    ptrs.reserve(text.size());
    for (const auto& t : text) ptrs.push_back(t.c_str());
    if (!ptrs.empty())
      op("writing dataset /tokens/text", [&] { text_ds.write(ptrs.data(), type); });
    string_list_attribute(text_ds, "/tokens/text", "dims", {"batch", "pos"});
  }

  void root_attributes(H5::H5File& file, const ExportMetadata& meta) {
    string_attribute(file, "/", "poslens_version", meta.tool_version);
    string_attribute(file, "/", "model_config", meta.model_config_json);
    string_attribute(file, "/", "checkpoint", meta.checkpoint);
    string_attribute(file, "/", "device", meta.device);
    string_attribute(file, "/", "dtype", meta.dtype);
    if (!meta.weights_sha256.empty()) string_attribute(file, "/", "weights_sha256", meta.weights_sha256);
    if (!meta.interventions.empty()) string_attribute(file, "/", "interventions", meta.interventions);
  }

  void dataset(H5::H5File& file, const Hdf5Dataset& d) {
    const auto slash = d.path.rfind('/');
    H5::Group group = group_at(file, d.path.substr(0, slash));
    const std::string name = d.path.substr(slash + 1);
    H5::DataSet ds = d.tensor.defined() ? write_tensor(group, name, d.path, d.tensor, d.dims)
                                        : write_strings(group, name, d.path, d.strings, d.dims);
    for (const auto& a : d.attributes) attribute(ds, d.path, a);
  }

 private:
  std::string path_;
};

/// Checks one tensor to be written: defined, on the CPU, at least 1-D, one label per dim.
void validate_tensor(const Writer& w, const std::string& where, const at::Tensor& t,
                     const std::vector<std::string>& dims) {
  if (!t.defined()) w.fail(where + " has no tensor");
  if (!t.device().is_cpu())
    w.fail(where + " is on " + t.device().str() + "; move it to the CPU first");
  if (t.dim() < 1) w.fail(where + " is a 0-d scalar; expected at least 1 dimension");
  if (static_cast<int64_t>(dims.size()) != t.dim())
    w.fail(where + " has shape " + shape_str(t) + " but " + std::to_string(dims.size()) +
           " dimension names");
  if (!t.is_floating_point() && !c10::isIntegralType(t.scalar_type(), /*includeBool=*/true))
    w.fail(where + " has dtype " + std::string(c10::toString(t.scalar_type())) +
           ", which cannot be written");
}

void validate_tokens(const Writer& w, const at::Tensor& token_ids,
                     const std::vector<std::string>& token_text) {
  if (!token_ids.defined()) w.fail("token ids are missing");
  if (!token_ids.device().is_cpu())
    w.fail("token ids are on " + token_ids.device().str() + "; move them to the CPU first");
  if (token_ids.dim() != 2 || token_ids.scalar_type() != torch::kLong)
    w.fail("token ids must be an int64 [batch, pos] tensor, got " +
           std::string(c10::toString(token_ids.scalar_type())) + " " + shape_str(token_ids));
  if (static_cast<int64_t>(token_text.size()) != token_ids.numel())
    w.fail("token text has " + std::to_string(token_text.size()) + " entries but token ids " +
           shape_str(token_ids) + " have " + std::to_string(token_ids.numel()));
}

void validate_datasets(
    const Writer& w, const std::vector<Hdf5Dataset>& datasets,
    const std::vector<std::pair<std::string, std::vector<Hdf5Attribute>>>& groups,
    bool with_tokens) {
  std::set<std::string> paths, group_paths;
  for (const auto& d : datasets) {
    const std::string where = "dataset '" + d.path + "'";
    if (d.path.empty() || d.path[0] != '/') w.fail(where + ": the path must start with '/'");
    std::string normal;
    for (const auto& part : split_path(d.path)) {
      if (part == "." || part == "..") w.fail(where + ": '.' and '..' are not allowed");
      group_paths.insert(normal.empty() ? "/" : normal);
      normal += "/" + part;
    }
    if (normal != d.path) w.fail(where + ": empty path component");
    if (with_tokens && d.path.rfind("/tokens", 0) == 0) w.fail(where + " clashes with /tokens");
    if (!paths.insert(d.path).second) w.fail(where + " appears twice");
    if (d.tensor.defined() && !d.strings.empty()) w.fail(where + " has both a tensor and strings");
    if (d.tensor.defined())
      validate_tensor(w, where, d.tensor, d.dims);
    else if (d.dims.size() != 1)
      w.fail(where + " is a 1-D string dataset but has " + std::to_string(d.dims.size()) +
             " dimension names");
  }
  for (const auto& p : paths)
    if (group_paths.count(p)) w.fail("'" + p + "' is both a dataset and a group");
  for (const auto& g : groups)
    if (!group_paths.count(g.first)) w.fail("attributes for '" + g.first + "', which holds no dataset");
}

/// Runs `f`, turning what escapes Writer::op (not expected) into poslens::Error.
template <typename F>
void guarded(Writer& writer, F&& f) {
  try {
    f();
  } catch (const H5::Exception& e) {
    writer.fail("HDF5 error in " + e.getFuncName() + ": " + e.getDetailMsg());
  } catch (const c10::Error& e) {
    writer.fail(std::string("converting a tensor failed: ") + e.what_without_backtrace());
  } catch (const std::bad_alloc&) {
    writer.fail("out of memory while converting a tensor");
  }
}

}  // namespace

struct Hdf5Writer::Impl {
  Writer writer;
  AtomicOutput out;
  H5::H5File file;
  std::map<std::string, H5::DataSet> streamed;
  std::set<std::string> paths;

  Impl(const std::string& path) : writer(path), out(checked(writer, path)) {}

  static std::string checked(Writer& w, const std::string& path) {
    H5::Exception::dontPrint();
    if (path.empty()) w.fail("empty output path");
    return path;
  }

  /// Registers a new dataset path; fails for duplicates and malformed paths.
  void claim(const std::string& path) {
    const std::string where = "dataset '" + path + "'";
    if (path.empty() || path[0] != '/') writer.fail(where + ": the path must start with '/'");
    std::string normal;
    for (const auto& part : split_path(path)) {
      if (part == "." || part == "..") writer.fail(where + ": '.' and '..' are not allowed");
      normal += "/" + part;
    }
    if (normal != path) writer.fail(where + ": empty path component");
    if (!paths.insert(path).second) writer.fail(where + " appears twice");
  }
};

Hdf5Writer::Hdf5Writer(const std::string& path, const ExportMetadata& meta)
    : impl_(std::make_unique<Impl>(path)) {
  auto& w = impl_->writer;
  try {
    impl_->file = w.op("creating the temporary file '" + impl_->out.path() + "'",
                       [&] { return H5::H5File(impl_->out.path(), H5F_ACC_TRUNC); });
  } catch (const Error& e) {
    std::error_code ignored;
    fs::remove(impl_->out.path(), ignored);
    throw;
  }
  guarded(w, [&] { w.root_attributes(impl_->file, meta); });
}

Hdf5Writer::~Hdf5Writer() {
  if (!impl_) return;
  try {
    impl_->streamed.clear();
    impl_->file.close();  // before AtomicOutput removes the temporary
  } catch (...) {
  }
}

void Hdf5Writer::create(const std::string& dataset_path, const std::vector<int64_t>& shape,
                        const std::vector<std::string>& dims,
                        const std::vector<Hdf5Attribute>& attributes, float fill) {
  auto& w = impl_->writer;
  impl_->claim(dataset_path);
  if (dims.size() != shape.size())
    w.fail("dataset '" + dataset_path + "' has " + std::to_string(shape.size()) +
           " dimensions but " + std::to_string(dims.size()) + " dimension names");
  std::vector<hsize_t> extent;
  for (const auto d : shape) {
    if (d < 0) w.fail("dataset '" + dataset_path + "' has a negative size");
    extent.push_back(static_cast<hsize_t>(d));
  }
  guarded(w, [&] {
    const auto slash = dataset_path.rfind('/');
    H5::Group group = w.group_at(impl_->file, dataset_path.substr(0, slash));
    const H5::DataSpace space(static_cast<int>(extent.size()), extent.data());
    const auto props = w.streamed_props(extent, fill);
    H5::DSetAccPropList access;
    // Room for every partly written chunk of a block of rows (one per head): 64 MiB.
    w.op("setting the chunk cache", [&] { access.setChunkCache(12421, std::size_t{64} << 20, 1.0); });
    H5::DataSet ds = w.op("creating dataset " + dataset_path, [&] {
      return group.createDataSet(dataset_path.substr(slash + 1), H5::PredType::IEEE_F32LE, space,
                                 props, access);
    });
    w.string_list_attribute(ds, dataset_path, "dims", dims);
    for (const auto& a : attributes) w.attribute(ds, dataset_path, a);
    impl_->streamed.emplace(dataset_path, ds);
  });
}

void Hdf5Writer::write(const std::string& dataset_path, const std::vector<int64_t>& offset,
                       const at::Tensor& values) {
  auto& w = impl_->writer;
  const auto it = impl_->streamed.find(dataset_path);
  if (it == impl_->streamed.end()) w.fail("dataset '" + dataset_path + "' was not created");
  if (!values.defined() || !values.device().is_cpu())
    w.fail("values for '" + dataset_path + "' must be a CPU tensor");
  guarded(w, [&] {
    H5::DataSpace file_space = it->second.getSpace();
    const int rank = file_space.getSimpleExtentNdims();
    std::vector<hsize_t> extent(static_cast<size_t>(rank));
    file_space.getSimpleExtentDims(extent.data());
    if (static_cast<int>(offset.size()) != rank || values.dim() != rank)
      w.fail("write to '" + dataset_path + "': offset and values must have " +
             std::to_string(rank) + " dimensions, got " + std::to_string(offset.size()) + " and " +
             shape_str(values));
    std::vector<hsize_t> start, count;
    for (int d = 0; d < rank; ++d) {
      if (offset[d] < 0 || offset[d] + values.size(d) > static_cast<int64_t>(extent[d]))
        w.fail("write to '" + dataset_path + "': " + shape_str(values) + " at offset " +
               std::to_string(offset[d]) + " leaves dimension " + std::to_string(d) + " of " +
               std::to_string(extent[d]));
      start.push_back(static_cast<hsize_t>(offset[d]));
      count.push_back(static_cast<hsize_t>(values.size(d)));
    }
    if (values.numel() == 0) return;
    const auto data = values.to(torch::kFloat).contiguous();
    w.op("selecting a hyperslab of " + dataset_path,
         [&] { file_space.selectHyperslab(H5S_SELECT_SET, count.data(), start.data()); });
    const H5::DataSpace memory(rank, count.data());
    w.op("writing dataset " + dataset_path, [&] {
      it->second.write(data.data_ptr(), H5::PredType::NATIVE_FLOAT, memory, file_space);
    });
  });
}

void Hdf5Writer::add(const Hdf5Dataset& d) {
  auto& w = impl_->writer;
  impl_->claim(d.path);
  if (d.tensor.defined() && !d.strings.empty()) w.fail("dataset '" + d.path + "' has both a tensor and strings");
  if (d.tensor.defined()) validate_tensor(w, "dataset '" + d.path + "'", d.tensor, d.dims);
  else if (d.dims.size() != 1)
    w.fail("dataset '" + d.path + "' is a 1-D string dataset but has " +
           std::to_string(d.dims.size()) + " dimension names");
  guarded(w, [&] { w.dataset(impl_->file, d); });
}

void Hdf5Writer::group_attributes(const std::string& group_path,
                                  const std::vector<Hdf5Attribute>& attributes) {
  auto& w = impl_->writer;
  guarded(w, [&] {
    H5::Group group = w.group_at(impl_->file, group_path);
    for (const auto& a : attributes) w.attribute(group, group_path, a);
  });
}

void Hdf5Writer::tokens(const at::Tensor& token_ids, const std::vector<std::string>& token_text) {
  auto& w = impl_->writer;
  validate_tokens(w, token_ids, token_text);
  guarded(w, [&] {
    H5::Group tokens = w.op("creating group /tokens", [&] { return impl_->file.createGroup("tokens"); });
    w.write_tokens(tokens, token_ids, token_text);
  });
}

void Hdf5Writer::copy_file(const std::string& source, const std::string& group_path) {
  auto& w = impl_->writer;
  impl_->claim(group_path);
  guarded(w, [&] {
    const auto exists = w.op("checking '" + source + "'", [&] { return H5::H5File::isHdf5(source); });
    if (!exists) w.fail("'" + source + "' is not an HDF5 file");
    H5::H5File in = w.op("opening '" + source + "'", [&] { return H5::H5File(source, H5F_ACC_RDONLY); });
    H5::Group target = w.group_at(impl_->file, group_path);
    H5::Group root = w.op("opening / of '" + source + "'", [&] { return in.openGroup("/"); });
    const hsize_t n = w.op("listing '" + source + "'", [&] { return root.getNumObjs(); });
    for (hsize_t i = 0; i < n; ++i) {
      const std::string name = w.op("listing '" + source + "'", [&] { return std::string(root.getObjnameByIdx(i)); });
      const herr_t status = H5Ocopy(root.getId(), name.c_str(), target.getId(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT);
      if (status < 0) w.fail("copying /" + name + " of '" + source + "' failed");
    }
    const H5::StrType text = hdf5::utf8_string_type();
    const int attributes = w.op("listing attributes of '" + source + "'", [&] { return root.getNumAttrs(); });
    for (int i = 0; i < attributes; ++i) {
      H5::Attribute a = w.op("opening an attribute of '" + source + "'",
                             [&] { return root.openAttribute(static_cast<unsigned>(i)); });
      if (a.getTypeClass() != H5T_STRING || a.getSpace().getSimpleExtentType() != H5S_SCALAR) continue;
      std::string value;
      w.op("reading attribute " + a.getName() + " of '" + source + "'", [&] { a.read(text, value); });
      w.string_attribute(target, group_path, a.getName(), value);
    }
  });
}

void Hdf5Writer::commit() {
  auto& w = impl_->writer;
  guarded(w, [&] {
    impl_->streamed.clear();
    w.op("closing the temporary file '" + impl_->out.path() + "'", [&] { impl_->file.close(); });
  });
  impl_->out.commit();
}

void write_captures_hdf5(const std::string& path, const std::vector<NamedCapture>& captures,
                         const at::Tensor& token_ids, const std::vector<std::string>& token_text,
                         const ExportMetadata& meta) {
  H5::Exception::dontPrint();
  Writer writer(path);
  std::set<std::string> names;
  for (const auto& cap : captures) {
    const std::string where = "capture '" + cap.name + "'";
    if (cap.name.empty()) writer.fail("a capture has an empty name");
    if (cap.name.find('/') != std::string::npos || cap.name == "." || cap.name == "..")
      writer.fail(where + ": hook names may not contain '/' or be '.' or '..'");
    if (!names.insert(cap.name).second) writer.fail(where + " appears twice");
    validate_tensor(writer, where, cap.tensor, cap.dims);
  }
  validate_tokens(writer, token_ids, token_text);
  Hdf5Writer file(path, meta);
  file.group_attributes("/captures", {});  // the group exists even when nothing was captured
  // Captures are float32 whatever the model's dtype (docs/hdf5-layout.md).
  for (const auto& cap : captures)
    file.add({"/captures/" + cap.name, cap.tensor.to(torch::kFloat), {}, cap.dims, {}});
  file.tokens(token_ids, token_text);
  file.commit();
}

void write_analysis_hdf5(
    const std::string& path, const std::vector<Hdf5Dataset>& datasets,
    const std::vector<std::pair<std::string, std::vector<Hdf5Attribute>>>& group_attributes,
    const at::Tensor& token_ids, const std::vector<std::string>& token_text,
    const ExportMetadata& meta) {
  H5::Exception::dontPrint();
  Writer writer(path);
  validate_datasets(writer, datasets, group_attributes, token_ids.defined());
  if (token_ids.defined()) validate_tokens(writer, token_ids, token_text);
  Hdf5Writer file(path, meta);
  for (const auto& d : datasets) file.add(d);
  for (const auto& [group, attributes] : group_attributes) file.group_attributes(group, attributes);
  if (token_ids.defined()) file.tokens(token_ids, token_text);
  file.commit();
}

}  // namespace poslens
