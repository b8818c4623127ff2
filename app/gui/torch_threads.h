#pragma once
namespace poslens::gui {
/// LibTorch defaults to one intra-op thread here; the worker thread should use every core.
void use_all_cores_for_torch();
}  // namespace poslens::gui
