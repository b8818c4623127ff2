#include "core/formats/hdf5_check.h"

#include <algorithm>
#include <vector>

#include "core/base/error.h"
#include "core/base/isolated_run.h"
#include "core/formats/hdf5_call.h"
#include "core/formats/hdf5_reader.h"
#include "core/formats/hdf5_strings.h"

namespace poslens {
namespace {

constexpr int kMaxObjects = 100000;
constexpr int kMaxDepth = 32;

/// Reads, object by object, what Hdf5Reader may be asked to read from one file. Runs in the
/// child process of check_hdf5_in_child; no LibTorch here (it does not survive fork).
class FileWalk {
 public:
  FileWalk(std::string path, long long budget) : path_(std::move(path)), budget_(budget) {}

  /// Walks the file; returns every string it read.
  Hdf5Strings run() {
    H5::Exception::dontPrint();
    hdf5::require_hdf5_file(path_);
    const H5::H5File file = op("opening the file", [&] { return H5::H5File(path_, H5F_ACC_RDONLY); });
    group(op("opening /", [&] { return file.openGroup("/"); }), "/", 0);
    return std::move(strings_);
  }

 private:
  template <typename F>
  auto op(const std::string& what, F&& f) const -> decltype(f()) {
    return hdf5::call(path_, what, std::forward<F>(f));
  }

  void count(const std::string& name, int depth) {
    // Hard links can make cycles: the counts bound the walk.
    if (++objects_ > kMaxObjects) throw Error(path_ + ": more than " + std::to_string(kMaxObjects) + " objects (at " + name + ")");
    if (depth > kMaxDepth) throw Error(path_ + ": groups nested more than " + std::to_string(kMaxDepth) + " deep (at " + name + ")");
  }

  void group(const H5::Group& g, const std::string& name, int depth) {
    count(name, depth);
    attributes(g, name);
    const hsize_t n = op("listing " + name, [&] { return g.getNumObjs(); });
    for (hsize_t i = 0; i < n; ++i) {
      const auto child = op("listing " + name, [&] { return std::string(g.getObjnameByIdx(i)); });
      const std::string full = (name == "/" ? "/" : name + "/") + child;
      const auto kind = op("reading the kind of " + full, [&] { return g.getObjTypeByIdx(i); });
      if (kind == H5G_GROUP)
        group(op("opening " + full, [&] { return g.openGroup(child); }), full, depth + 1);
      else if (kind == H5G_DATASET)
        dataset(op("opening " + full, [&] { return g.openDataSet(child); }), full, depth + 1);
    }
  }

  /// The attribute reads Hdf5Reader makes: scalar strings, 1-D string lists, scalar integers.
  void attributes(const H5::H5Object& object, const std::string& name) {
    const int n = op("counting the attributes of " + name, [&] { return object.getNumAttrs(); });
    for (int i = 0; i < n; ++i) {
      const std::string what = "reading attribute " + std::to_string(i) + " of " + name;
      const auto a = op(what, [&] { return object.openAttribute(static_cast<unsigned>(i)); });
      const auto type_class = op(what, [&] { return a.getTypeClass(); });
      const auto space = op(what, [&] { return a.getSpace(); });
      const auto extent = op(what, [&] { return space.getSimpleExtentType(); });
      const auto attribute_name = op(what, [&] { return a.getName(); });
      if (type_class == H5T_STRING && extent == H5S_SCALAR) {
        std::string value;
        const auto type = op(what, [&] { return a.getStrType(); });
        op(what, [&] { a.read(type, value); });
        strings_.values[Hdf5Strings::attribute_key(name, attribute_name)] = {value};
      } else if (type_class == H5T_STRING && op(what, [&] { return space.getSimpleExtentNdims(); }) == 1) {
        hsize_t count = 0;
        op(what, [&] { space.getSimpleExtentDims(&count); });
        if (count > (hsize_t{1} << 24)) continue;  // the reader refuses it before reading
        hdf5::VlenStrings strings(static_cast<size_t>(count), space.getId());
        if (count > 0) op(what, [&] { a.read(strings.type, strings.raw.data()); });
        strings_.values[Hdf5Strings::attribute_key(name, attribute_name)] = strings.strings();
      } else if (type_class == H5T_INTEGER && extent == H5S_SCALAR) {
        int64_t value = 0;
        op(what, [&] { a.read(H5::PredType::NATIVE_INT64, &value); });
      }
    }
  }

  void dataset(const H5::DataSet& ds, const std::string& name, int depth) {
    count(name, depth);
    attributes(ds, name);
    const auto space = op("reading the shape of " + name, [&] { return ds.getSpace(); });
    const int rank = op("reading the shape of " + name, [&] { return space.getSimpleExtentNdims(); });
    std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
    if (rank > 0) op("reading the shape of " + name, [&] { space.getSimpleExtentDims(dims.data()); });
    double elements = 1;
    for (const auto d : dims) elements *= static_cast<double>(d);
    if (elements == 0) return;
    const auto type_class = op("reading the type of " + name, [&] { return ds.getTypeClass(); });
    if (type_class == H5T_STRING) {
      if (elements * 16 > static_cast<double>(kMaxReadBytes)) return;  // refused unread by the reader
      hdf5::VlenStrings strings(static_cast<size_t>(elements), space.getId());
      op("reading " + name, [&] { ds.read(strings.raw.data(), strings.type); });
      strings_.values[Hdf5Strings::dataset_key(name)] = strings.strings();
    } else if (type_class == H5T_FLOAT || type_class == H5T_INTEGER) {
      const bool floating = type_class == H5T_FLOAT;
      if (elements * 8 <= static_cast<double>(std::min<long long>(budget_, kMaxReadBytes))) {
        budget_ -= static_cast<long long>(elements * 8);
        read_box(ds, name, floating, std::vector<hsize_t>(dims.size(), 0), dims);
        return;
      }
      // Past the budget: the first and last map (the trailing two dimensions, or a row of a
      // matrix), as a layer/head view reads them.
      const size_t lead = dims.size() > 2 ? dims.size() - 2 : dims.size() - 1;
      std::vector<hsize_t> box(dims);
      std::fill(box.begin(), box.begin() + static_cast<std::ptrdiff_t>(lead), 1);
      double box_elements = 1;
      for (const auto d : box) box_elements *= static_cast<double>(d);
      if (box_elements * 8 > static_cast<double>(kMaxReadBytes)) return;
      std::vector<hsize_t> last(dims.size(), 0);
      for (size_t d = 0; d < lead; ++d) last[d] = dims[d] - 1;
      read_box(ds, name, floating, std::vector<hsize_t>(dims.size(), 0), box);
      read_box(ds, name, floating, last, box);
    }
  }

  void read_box(const H5::DataSet& ds, const std::string& name, bool floating, const std::vector<hsize_t>& start,
                const std::vector<hsize_t>& count) const {
    double elements = 1;
    for (const auto c : count) elements *= static_cast<double>(c);
    std::vector<double> buffer(static_cast<size_t>(elements));  // 8 bytes, for int64 too
    auto file_space = op("reading the shape of " + name, [&] { return ds.getSpace(); });
    if (!start.empty())
      op("selecting part of " + name, [&] { file_space.selectHyperslab(H5S_SELECT_SET, count.data(), start.data()); });
    const H5::DataSpace memory(static_cast<int>(count.size()), count.empty() ? nullptr : count.data());
    op("reading " + name, [&] {
      ds.read(buffer.data(), floating ? H5::PredType::NATIVE_DOUBLE : H5::PredType::NATIVE_INT64, memory,
              file_space);
    });
  }

  std::string path_;
  long long budget_;
  int objects_ = 0;
  Hdf5Strings strings_;
};

}  // namespace

Hdf5Strings check_hdf5_in_child(const std::string& path, double timeout_s, const std::function<bool()>& cancelled,
                                long long numeric_budget_bytes) {
  const auto outcome = run_isolated(
      std::function<std::string()>([&] { return FileWalk(path, numeric_budget_bytes).run().serialise(); }),
      timeout_s, cancelled);
  switch (outcome.kind) {
    case IsolatedOutcome::Kind::Succeeded:
      return Hdf5Strings::parse(outcome.output, path);
    case IsolatedOutcome::Kind::Failed:
      throw Error(outcome.message);
    case IsolatedOutcome::Kind::Cancelled:
      throw Cancelled();
    case IsolatedOutcome::Kind::Crashed:
      throw Error(path + ": reading it crashed the HDF5 library (" + outcome.message +
                  ", in a separate process); the file is damaged or made to break readers, and was not opened");
    case IsolatedOutcome::Kind::TimedOut:
      throw Error(path + ": the HDF5 library did not finish reading it within " +
                  std::to_string(static_cast<int>(timeout_s)) +
                  " s (a damaged file can make it loop); it was not opened");
  }
  throw Error(path + ": the check ended in a way PosLens does not know");
}

}  // namespace poslens
