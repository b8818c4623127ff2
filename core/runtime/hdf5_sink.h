#pragma once
// Streams a forward pass's hooks into an HDF5 file as they are made (docs/hdf5-layout.md,
// /captures/<hook name>): per-position hooks as they come (logits in chunks of positions), map
// hooks block by block into [batch, head, T, T] datasets. Nothing beyond the block being
// written is held, so `poslens-cli run` at 32k tokens needs the disk, not the memory.
#include <optional>
#include <set>
#include <string>

#include "core/formats/hdf5_export.h"
#include "core/runtime/capture_sink.h"
#include "core/runtime/hook_sink.h"

namespace poslens {

class Hdf5CaptureSink : public HookSink {
 public:
  /// Writes what `spec` wants into `file` (which must outlive the sink). With `heads`, map
  /// hooks keep only the selected heads of each layer (dataset attribute "heads" lists them);
  /// with `maps` false, map hooks are left to another sink (e.g. PooledMapSink).
  Hdf5CaptureSink(Hdf5Writer& file, CaptureSpec spec, std::optional<HeadSelection> heads = {},
                  bool maps = true);
  bool wants(const HookPoint& point) const override;
  void begin(int64_t batch, int64_t length) override;
  void tensor(const HookPoint& point, const at::Tensor& value, int64_t pos_begin) override;
  void block(const HookPoint& point, const MapBlock& block) override;

 private:
  Hdf5Writer& file_;
  CaptureSpec spec_;
  std::optional<HeadSelection> heads_;
  bool maps_;
  int64_t length_ = 0;
  std::set<std::string> created_;
};

}  // namespace poslens
