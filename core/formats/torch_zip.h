#pragma once
// Reader for PyTorch's torch.save zip format holding a state_dict (`model.pt`, Hugging Face
// `pytorch_model.bin`), without executing pickle code.
// Format (torch/serialization.py, _save/_load; caffe2/serialize/inline_container.h): a zip
// archive whose entries all sit in one folder <archive>/ and are stored uncompressed, 64-byte
// aligned: data.pkl (the pickled object, protocol 2, every tensor storage replaced by a
// persistent id ('storage', torch.<T>Storage, key, location, numel)), data/<key> (the raw bytes
// of each storage), version, and since PyTorch 2.1 byteorder ("little" or "big").
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/formats/tensor_source.h"

namespace poslens {

/// A validated torch.save archive of tensors. The constructor reads the zip directory with
/// LibTorch's caffe2::serialize::PyTorchStreamReader, unpickles data.pkl with the restricted
/// unpickler (core/restricted_unpickler.h: an allow-list of globals, nothing is executed, as
/// PyTorch's weights_only=True loader) and checks every tensor before any tensor data is read:
///  - the top-level object is a dict (OrderedDict or dict). Tensors in nested dicts, lists and
///    tuples are named by joining keys and indices with "." ({"model": {"w": t}, "ema": [t]} ->
///    "model.w", "ema.0"); values that are not tensors or containers (an int "step", a float)
///    are skipped. Keys must be str or int, names non-empty and unique, nesting <= 32 levels;
///  - each tensor's dtype is its storage type's: Float, Half, BFloat16, Double, Long, Int,
///    Short, Char, Byte, Bool (F32 ... Bool); size and stride have the same length, sizes,
///    strides and the storage offset are >= 0, and the highest element the view reaches,
///    offset + sum((size_i - 1) * stride_i), lies inside the storage's numel (no overflow);
///  - each storage key names an existing data/<key> record, and every tensor that shares a
///    storage key agrees on its size in bytes (tied weights share one storage);
///  - a byteorder record, when present, says "little".
/// Throws poslens::Error("<path>: <what is wrong>") on a missing or non-regular file, a file
/// that is not a zip (a legacy pre-1.6 torch.save pickle and a TorchScript archive are named as
/// such), a truncated or corrupt zip, no data.pkl, a pickle the restricted unpickler refuses
/// (any global other than the allowed ones, e.g. `refusing to load global "os.system"`), or any
/// check above. Device locations ("cuda:0") are ignored: every tensor is read to the CPU.
/// tensors() lists the tensors in the pickle's (insertion) order.
/// Sources: torch/serialization.py, torch/_weights_only_unpickler.py, torch/_utils.py.
class TorchZipFile : public TensorSource {
 public:
  explicit TorchZipFile(const std::string& path);
  ~TorchZipFile() override;
  TorchZipFile(const TorchZipFile&) = delete;
  TorchZipFile& operator=(const TorchZipFile&) = delete;

  const std::vector<TensorInfo>& tensors() const override;
  /// The non-tensor leaves of the pickle (None, bool, int, float, str), named as tensors are
  /// ("model_args.n_layer", "iter_num"): what a training checkpoint says beside its weights
  /// (nanoGPT's ckpt.pt). Values as JSON (None -> null).
  const std::map<std::string, nlohmann::json>& scalars() const;
  /// The tensor `name`: CPU, the stored dtype (F32 -> kFloat, F16 -> kHalf, BF16 -> kBFloat16,
  /// F64 -> kDouble, I64 -> kLong, I32 -> kInt, I16 -> kShort, I8 -> kChar, U8 -> kByte,
  /// Bool -> kBool), the saved shape and strides (a transposed view stays a strided view). Its
  /// storage record is read from the archive on first use into memory the tensor shares
  /// ownership of, so the tensor stays valid after this object is destroyed. Tensors of one
  /// storage loaded while another of them is alive share that memory, as torch.load does for
  /// tied weights: writing one changes the other - clone before modifying. A storage's only
  /// tensor, when it is the whole storage in row-major order (every weight torch.save wrote
  /// from a state_dict without tied ones), instead owns its record outright: a fresh block from
  /// LibTorch's CPU allocator per load, which a loader can keep without copying. Thread-safe.
  /// Throws poslens::Error naming the file and tensor if the name is unknown, the record cannot
  /// be read or its size is not the storage's numel x element size. LibTorch's zip reader does
  /// not verify the records' CRC-32 (nor does torch.load), so bytes damaged inside a record
  /// read as different values; a damaged pickle or zip directory is an error.
  at::Tensor load(const std::string& name) const override;
  /// The path given to the constructor.
  std::string describe() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace poslens
