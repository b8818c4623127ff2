#include "core/formats/hdf5_reader.h"

#include <torch/torch.h>

#include <optional>

#include "core/base/error.h"
#include "core/formats/hdf5_call.h"
#include "core/formats/hdf5_strings.h"

namespace poslens {

struct Hdf5Reader::Impl {
  std::string path;
  H5::H5File file;
  std::shared_ptr<const Hdf5Strings> checked;  ///< the child's strings, when given

  /// The child's strings under `key`; an error naming `what` when the child did not read it.
  const std::vector<std::string>& checked_strings(const std::string& key, const std::string& what) const {
    const auto it = checked->values.find(key);
    if (it == checked->values.end())
      throw Error(path + ": " + what + " was not read when the file was checked (was the file changed?)");
    return it->second;
  }

  /// Runs one HDF5 call; its H5::Exception becomes a poslens::Error naming the file.
  template <typename F>
  auto op(const std::string& what, F&& f) const -> decltype(f()) {
    return hdf5::call(path, what, std::forward<F>(f));
  }
  H5::DataSet dataset(const std::string& name) const {
    if (!exists(name)) throw Error(path + ": no dataset " + name);
    return op("opening " + name, [&] { return file.openDataSet(name); });
  }
  bool exists(const std::string& object) const {
    if (object.empty() || object[0] != '/') return false;
    if (object == "/") return true;
    // Each link along the path must exist before the next is looked up (H5Lexists's rule).
    std::string sofar;
    size_t begin = 1;
    while (begin <= object.size()) {
      const size_t end = std::min(object.find('/', begin), object.size());
      sofar += "/" + object.substr(begin, end - begin);
      if (H5Lexists(file.getId(), sofar.c_str(), H5P_DEFAULT) <= 0) return false;
      begin = end + 1;
    }
    return true;
  }
  std::vector<int64_t> extent(const H5::DataSet& ds, const std::string& name) const {
    const H5::DataSpace space = op("reading the shape of " + name, [&] { return ds.getSpace(); });
    const int rank = space.getSimpleExtentNdims();
    std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
    if (rank > 0) space.getSimpleExtentDims(dims.data());
    return std::vector<int64_t>(dims.begin(), dims.end());
  }
  void check_size(const std::vector<int64_t>& shape, int64_t element, const std::string& name) const {
    double bytes = static_cast<double>(element);
    for (const auto d : shape) bytes *= static_cast<double>(d);
    if (bytes > static_cast<double>(kMaxReadBytes))
      throw Error(path + ": dataset " + name + " is " + std::to_string(static_cast<int64_t>(bytes)) +
                  " bytes, more than the " + std::to_string(kMaxReadBytes >> 20) + " MiB PosLens reads");
  }
};

Hdf5Reader::Hdf5Reader(const std::string& path, std::shared_ptr<const Hdf5Strings> strings) : Hdf5Reader(path) {
  impl_->checked = std::move(strings);
}

Hdf5Reader::Hdf5Reader(const std::string& path) : impl_(std::make_unique<Impl>()) {
  H5::Exception::dontPrint();
  impl_->path = path;
  hdf5::require_hdf5_file(path);
  impl_->file = impl_->op("opening the file", [&] { return H5::H5File(path, H5F_ACC_RDONLY); });
}

Hdf5Reader::~Hdf5Reader() = default;

const std::string& Hdf5Reader::path() const { return impl_->path; }

bool Hdf5Reader::exists(const std::string& object) const { return impl_->exists(object); }

std::vector<std::string> Hdf5Reader::children(const std::string& group) const {
  if (!exists(group)) throw Error(impl_->path + ": no group " + group);
  const H5::Group g = impl_->op("opening " + group, [&] { return impl_->file.openGroup(group); });
  std::vector<std::string> names;
  const hsize_t n = impl_->op("listing " + group, [&] { return g.getNumObjs(); });
  for (hsize_t i = 0; i < n; ++i)
    names.push_back(impl_->op("listing " + group, [&] { return std::string(g.getObjnameByIdx(i)); }));
  return names;
}

std::vector<int64_t> Hdf5Reader::shape(const std::string& dataset) const {
  return impl_->extent(impl_->dataset(dataset), dataset);
}

at::Tensor Hdf5Reader::read(const std::string& name) const {
  const auto ds = impl_->dataset(name);
  const auto shape = impl_->extent(ds, name);
  const auto type_class = impl_->op("reading the type of " + name, [&] { return ds.getTypeClass(); });
  if (type_class != H5T_FLOAT && type_class != H5T_INTEGER)
    throw Error(impl_->path + ": dataset " + name + " is not numeric");
  impl_->check_size(shape, 8, name);
  const bool floating = type_class == H5T_FLOAT;
  auto out = torch::empty(shape, floating ? torch::kDouble : torch::kLong);
  if (out.numel() > 0)
    impl_->op("reading " + name, [&] {
      ds.read(out.data_ptr(), floating ? H5::PredType::NATIVE_DOUBLE : H5::PredType::NATIVE_INT64);
    });
  return out;
}

at::Tensor Hdf5Reader::read_slice(const std::string& name, const std::vector<int64_t>& index) const {
  const auto ds = impl_->dataset(name);
  const auto shape = impl_->extent(ds, name);
  if (index.size() > shape.size())
    throw Error(impl_->path + ": dataset " + name + " has " + std::to_string(shape.size()) + " dimensions, not " +
                std::to_string(index.size()));
  std::vector<hsize_t> start(shape.size(), 0), count(shape.begin(), shape.end());
  for (size_t d = 0; d < index.size(); ++d) {
    if (index[d] < 0 || index[d] >= shape[d])
      throw Error(impl_->path + ": index " + std::to_string(index[d]) + " is outside dimension " + std::to_string(d) +
                  " (" + std::to_string(shape[d]) + ") of " + name);
    start[d] = static_cast<hsize_t>(index[d]);
    count[d] = 1;
  }
  const std::vector<int64_t> rest(shape.begin() + static_cast<std::ptrdiff_t>(index.size()), shape.end());
  const auto type_class = impl_->op("reading the type of " + name, [&] { return ds.getTypeClass(); });
  if (type_class != H5T_FLOAT && type_class != H5T_INTEGER)
    throw Error(impl_->path + ": dataset " + name + " is not numeric");
  impl_->check_size(rest, 8, name);
  const bool floating = type_class == H5T_FLOAT;
  auto out = torch::empty(rest, floating ? torch::kDouble : torch::kLong);
  if (out.numel() == 0) return out;
  H5::DataSpace file_space = ds.getSpace();
  impl_->op("selecting part of " + name,
            [&] { file_space.selectHyperslab(H5S_SELECT_SET, count.data(), start.data()); });
  const H5::DataSpace memory(static_cast<int>(count.size()), count.data());
  impl_->op("reading " + name, [&] {
    ds.read(out.data_ptr(), floating ? H5::PredType::NATIVE_DOUBLE : H5::PredType::NATIVE_INT64, memory, file_space);
  });
  return out;
}

std::vector<std::string> Hdf5Reader::read_strings(const std::string& name) const {
  const auto ds = impl_->dataset(name);
  const auto shape = impl_->extent(ds, name);
  if (impl_->op("reading the type of " + name, [&] { return ds.getTypeClass(); }) != H5T_STRING)
    throw Error(impl_->path + ": dataset " + name + " is not a string dataset");
  impl_->check_size(shape, 16, name);
  int64_t count = 1;
  for (const auto d : shape) count *= d;
  if (impl_->checked) {
    const auto& strings = impl_->checked_strings(Hdf5Strings::dataset_key(name), "dataset " + name);
    if (static_cast<int64_t>(strings.size()) != count)
      throw Error(impl_->path + ": dataset " + name + " has another size than when the file was checked");
    return strings;
  }
  const H5::DataSpace space = impl_->op("reading the shape of " + name, [&] { return ds.getSpace(); });
  hdf5::VlenStrings strings(static_cast<size_t>(count), space.getId());
  if (count > 0) impl_->op("reading " + name, [&] { ds.read(strings.raw.data(), strings.type); });
  return strings.strings();
}

namespace {

/// The attribute `name` of the group or dataset at `object`, when there is one.
std::optional<H5::Attribute> find_attribute(const H5::H5File& file, const std::string& object, const std::string& name) {
  const H5O_type_t kind = file.childObjType(object);
  if (kind == H5O_TYPE_GROUP) {
    const H5::Group g = file.openGroup(object);
    if (g.attrExists(name)) return g.openAttribute(name);
  } else if (kind == H5O_TYPE_DATASET) {
    const H5::DataSet d = file.openDataSet(object);
    if (d.attrExists(name)) return d.openAttribute(name);
  }
  return std::nullopt;
}

}  // namespace

std::string Hdf5Reader::string_attribute(const std::string& object, const std::string& name) const {
  if (!exists(object)) return "";
  const auto a = impl_->op("opening attribute " + name + " of " + object,
                           [&] { return find_attribute(impl_->file, object, name); });
  if (!a) return "";
  const bool scalar_string = impl_->op("reading attribute " + name + " of " + object, [&] {
    return a->getTypeClass() == H5T_STRING && a->getSpace().getSimpleExtentType() == H5S_SCALAR;
  });
  if (!scalar_string) return "";
  if (impl_->checked) {
    const auto& value =
        impl_->checked_strings(Hdf5Strings::attribute_key(object, name), "attribute " + name + " of " + object);
    return value.empty() ? "" : value.front();
  }
  std::string value;
  impl_->op("reading attribute " + name + " of " + object, [&] { a->read(a->getStrType(), value); });
  return value;
}

std::vector<std::string> Hdf5Reader::string_list_attribute(const std::string& object, const std::string& name) const {
  if (!exists(object)) return {};
  const auto a = impl_->op("opening attribute " + name + " of " + object,
                           [&] { return find_attribute(impl_->file, object, name); });
  if (!a) return {};
  const std::string what = "reading attribute " + name + " of " + object;
  const H5::DataSpace space = impl_->op(what, [&] { return a->getSpace(); });
  const bool list = impl_->op(what, [&] {
    return a->getTypeClass() == H5T_STRING && space.getSimpleExtentNdims() == 1;
  });
  if (!list) return {};
  hsize_t n = 0;
  impl_->op(what, [&] { space.getSimpleExtentDims(&n); });
  if (n > (hsize_t{1} << 24)) throw Error(impl_->path + ": attribute " + name + " of " + object + " is too long");
  if (impl_->checked)
    return impl_->checked_strings(Hdf5Strings::attribute_key(object, name), "attribute " + name + " of " + object);
  hdf5::VlenStrings strings(static_cast<size_t>(n), space.getId());
  if (n > 0) impl_->op(what, [&] { a->read(strings.type, strings.raw.data()); });
  return strings.strings();
}

int64_t Hdf5Reader::int_attribute(const std::string& object, const std::string& name, int64_t fallback) const {
  if (!exists(object)) return fallback;
  const auto a = impl_->op("opening attribute " + name + " of " + object,
                           [&] { return find_attribute(impl_->file, object, name); });
  if (!a || a->getTypeClass() != H5T_INTEGER || a->getSpace().getSimpleExtentType() != H5S_SCALAR) return fallback;
  int64_t value = fallback;
  impl_->op("reading attribute " + name + " of " + object, [&] { a->read(H5::PredType::NATIVE_INT64, &value); });
  return value;
}

}  // namespace poslens
