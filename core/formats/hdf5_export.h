#pragma once
// HDF5 export of a forward pass's captures — the exchange format, readable with h5py.
// Layout (docs/hdf5-layout.md):
//   /captures/<hook name>   float32 dataset, shape as docs/formulas.md §1 (batch kept); attribute
//                           "dims" = array of dimension-name strings
//   /tokens/ids             int64 [batch, pos]
//   /tokens/text            variable-length UTF-8 strings [batch, pos]
//   root attributes         "poslens_version", "model_config" (JSON), "checkpoint",
//                           "device", "dtype", "weights_sha256", "interventions" (when any)
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <ATen/core/Tensor.h>

namespace poslens {

struct ExportMetadata {
  std::string tool_version;
  std::string model_config_json;
  std::string checkpoint;
  std::string device;
  std::string dtype;
  /// SHA-256 of the weight files (LoadedModel::weights_sha256); empty for a model made in
  /// memory (then the attribute is not written).
  std::string weights_sha256;
  /// What the model ran with instead of the checkpoint as stored (ModelConfig::interventions);
  /// written as the root attribute "interventions" when not empty.
  std::string interventions;
};

struct NamedCapture {
  std::string name;                 ///< hook name, e.g. "blocks.0.attn.hook_pattern"
  std::vector<std::string> dims;    ///< one name per dimension of `tensor`
  at::Tensor tensor;                ///< CPU; written as float32
};

/// Writes `captures`, the tokens and `meta` to the HDF5 file `path` (layout above).
///
/// Each capture becomes the float32 dataset `/captures/<name>` (the full hook name is one
/// dataset name; dots do not make groups) with the tensor's shape, e.g. [batch, head, q_pos,
/// k_pos] for `blocks.{l}.attn.hook_pattern`, and a 1-D variable-length UTF-8 string attribute
/// "dims" holding `dims`. Any CPU float or integer dtype is converted to float32 (bfloat16 and
/// float16 exactly). Datasets over 1 MiB are chunked (chunks of ~1 MiB, split along the leading
/// dimensions first) and gzip-compressed at level 1; smaller or empty ones are contiguous.
/// `token_ids` is a CPU int64 [batch, pos] tensor; `token_text` has batch*pos UTF-8 entries,
/// row-major. The strings of `meta` become scalar UTF-8 root attributes.
///
/// Atomic (AtomicOutput): the file is written to a temporary in the same folder, closed, synced
/// and then renamed onto `path`, so an interrupted or failing export leaves no half file and an
/// existing file at `path` untouched.
/// Throws poslens::Error (message names `path`, the failing operation and HDF5's own message)
/// when the folder of `path` does not exist, a capture has no tensor, is not on the CPU, is 0-d,
/// has a dims count different from its rank, a duplicate name or a name containing '/', when
/// `token_ids` is not 2-D int64 or `token_text` has the wrong count (these are checked before
/// anything is created), and on any HDF5 or file-system failure.
void write_captures_hdf5(const std::string& path, const std::vector<NamedCapture>& captures,
                         const at::Tensor& token_ids, const std::vector<std::string>& token_text,
                         const ExportMetadata& meta);

/// An attribute of an analysis file: a UTF-8 string, float64 or int64 scalar, or a 1-D list of
/// UTF-8 strings or of int64.
struct Hdf5Attribute {
  std::string name;
  std::variant<std::string, double, int64_t, std::vector<std::string>, std::vector<int64_t>> value;
};

/// One dataset of an analysis file (docs/hdf5-layout.md, "/analysis").
struct Hdf5Dataset {
  std::string path;               ///< absolute, e.g. "/analysis/probe/scores"; groups are made
  at::Tensor tensor;              ///< CPU; float64, int64 and bool (as uint8) keep their type,
                                  ///< other dtypes are written as float32
  std::vector<std::string> strings;  ///< when `tensor` is undefined: a 1-D UTF-8 string dataset
  std::vector<std::string> dims;     ///< one label per dimension ("dims" attribute)
  std::vector<Hdf5Attribute> attributes;
};

/// Writes an analysis file: `datasets` (groups created along their paths), the attributes of
/// groups (`group_attributes`, keyed by group path such as "/analysis/probe"; each group must
/// hold a dataset), the tokens (`/tokens/ids`, `/tokens/text` as write_captures_hdf5 writes
/// them; skipped when `token_ids` is undefined) and `meta` as root attributes. Same storage
/// (chunking, gzip above 1 MiB), atomicity and error contract as write_captures_hdf5; also
/// throws poslens::Error for a relative or duplicate dataset path, a path component that is
/// empty, "." or "..", a dataset with both a tensor and strings, or an attribute
/// group that no dataset lives in.
void write_analysis_hdf5(
    const std::string& path, const std::vector<Hdf5Dataset>& datasets,
    const std::vector<std::pair<std::string, std::vector<Hdf5Attribute>>>& group_attributes,
    const at::Tensor& token_ids, const std::vector<std::string>& token_text,
    const ExportMetadata& meta);

/// An HDF5 file written piece by piece: datasets are created with their final shape and filled
/// in hyperslabs (a block of query rows of a map, a layer at a time), so an export holds no
/// more than the piece it writes. Same layout, types, chunking (chunks of whole trailing rows,
/// ~1 MiB), gzip level 1 and error contract as write_analysis_hdf5; nothing appears at `path`
/// until commit(), and a writer destroyed uncommitted (an error, a cancelled job) leaves
/// nothing (AtomicOutput).
class Hdf5Writer {
 public:
  /// Creates the temporary file beside `path` and writes `meta` as root attributes. Throws
  /// poslens::Error when the folder does not exist or HDF5 fails.
  Hdf5Writer(const std::string& path, const ExportMetadata& meta);
  ~Hdf5Writer();
  Hdf5Writer(const Hdf5Writer&) = delete;
  Hdf5Writer& operator=(const Hdf5Writer&) = delete;

  /// Creates the float32 dataset `dataset_path` (absolute; groups made along it) of `shape`,
  /// to be filled with write(); unwritten entries read as `fill`. With "dims" = `dims` and
  /// `attributes`. Throws poslens::Error for a path that exists or is malformed, a dims count
  /// different from the rank, or a negative size.
  void create(const std::string& dataset_path, const std::vector<int64_t>& shape,
              const std::vector<std::string>& dims,
              const std::vector<Hdf5Attribute>& attributes = {}, float fill = 0.0f);
  /// Writes `values` (CPU, any float dtype; its shape is the hyperslab's) into `dataset_path`
  /// at `offset` (one entry per dimension). Throws poslens::Error for an unknown dataset or a
  /// hyperslab outside it.
  void write(const std::string& dataset_path, const std::vector<int64_t>& offset,
             const at::Tensor& values);
  /// A whole dataset at once, as write_analysis_hdf5 takes them.
  void add(const Hdf5Dataset& dataset);
  /// Attributes of the group `group_path` (created if missing).
  void group_attributes(const std::string& group_path, const std::vector<Hdf5Attribute>& attributes);
  /// `/tokens/ids` and `/tokens/text` as write_captures_hdf5 writes them.
  void tokens(const at::Tensor& token_ids, const std::vector<std::string>& token_text);
  /// Copies every object at the root of the HDF5 file `source` (its groups and datasets, with
  /// their attributes: H5Ocopy) into the new group `group_path`, and the source's scalar string
  /// root attributes (the ExportMetadata) onto that group — `poslens-cli merge`. Throws
  /// poslens::Error naming `source` when it is not a readable HDF5 file, or when `group_path`
  /// exists.
  void copy_file(const std::string& source, const std::string& group_path);
  /// Closes the file and renames it onto `path`. Throws poslens::Error.
  void commit();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace poslens
