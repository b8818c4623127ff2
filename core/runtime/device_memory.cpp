#include "core/runtime/device_memory.h"

#include <cstdio>

#ifdef POSLENS_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

namespace poslens {

bool built_with_cuda() {
#ifdef POSLENS_WITH_CUDA
  return true;
#else
  return false;
#endif
}

std::optional<DeviceMemory> device_memory(c10::Device device) {
#ifdef POSLENS_WITH_CUDA
  if (!device.is_cuda()) return std::nullopt;
  namespace allocator = c10::cuda::CUDACachingAllocator;
  const auto index = device.has_index() ? device.index() : c10::DeviceIndex{0};
  DeviceMemory m;
  const c10::cuda::CUDAGuard guard(index);
  size_t free = 0, total = 0;
  C10_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  m.free_bytes = static_cast<int64_t>(free);
  m.total_bytes = static_cast<int64_t>(total);
  m.peak_bytes = allocator::getDeviceStats(index).allocated_bytes[0].peak;  // [0]: every pool
  return m;
#else
  (void)device;
  return std::nullopt;
#endif
}

void reset_peak_device_memory(c10::Device device) {
#ifdef POSLENS_WITH_CUDA
  if (device.is_cuda())
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.has_index() ? device.index() : c10::DeviceIndex{0});
#else
  (void)device;
#endif
}

std::string gib_text(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  return text;
}

}  // namespace poslens
