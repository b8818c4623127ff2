#pragma once
// HDF5 export of a forward pass's captures — the exchange format, readable with h5py.
// Layout (docs/hdf5-layout.md):
//   /captures/<hook name>   float32 dataset, shape as SPEC.md §1 (batch kept); attribute
//                           "dims" = array of dimension-name strings
//   /tokens/ids             int64 [batch, pos]
//   /tokens/text            variable-length UTF-8 strings [batch, pos]
//   root attributes         "poslens_version", "model_config" (JSON), "checkpoint",
//                           "device", "dtype"
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace poslens {

struct ExportMetadata {
  std::string tool_version;
  std::string model_config_json;
  std::string checkpoint;
  std::string device;
  std::string dtype;
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
/// Atomic: the file is written to `path` + ".tmp-<pid>" in the same folder, closed and then
/// renamed onto `path`, so an interrupted or failing export leaves no half file and an existing
/// file at `path` untouched.
/// Throws poslens::Error (message names `path`, the failing operation and HDF5's own message)
/// when the folder of `path` does not exist, a capture has no tensor, is not on the CPU, is 0-d,
/// has a dims count different from its rank, a duplicate name or a name containing '/', when
/// `token_ids` is not 2-D int64 or `token_text` has the wrong count (these are checked before
/// anything is created), and on any HDF5 or file-system failure.
void write_captures_hdf5(const std::string& path, const std::vector<NamedCapture>& captures,
                         const at::Tensor& token_ids, const std::vector<std::string>& token_text,
                         const ExportMetadata& meta);

}  // namespace poslens
