#pragma once
// Device memory of a CUDA device, from LibTorch's caching allocator: what analyses size their
// blocks from and what every command run on CUDA reports beside its time.
#include <cstdint>
#include <optional>
#include <string>

#include <c10/core/Device.h>

namespace poslens {

/// True when this build's LibTorch has CUDA (the pip wheel's); false for Debian's CPU-only one.
bool built_with_cuda();

/// Bytes, as cudaMemGetInfo and the caching allocator count them.
struct DeviceMemory {
  int64_t free_bytes = 0;   ///< free on the device now (other processes' use excluded)
  int64_t total_bytes = 0;  ///< the device's memory
  int64_t peak_bytes = 0;   ///< most bytes this process's tensors held since the last reset
};

/// The memory of a CUDA `device`; nullopt for other devices and in builds without CUDA.
/// Throws c10::Error when CUDA fails (no such device).
std::optional<DeviceMemory> device_memory(c10::Device device);

/// Starts the peak of device_memory() afresh on a CUDA `device`; nothing elsewhere.
void reset_peak_device_memory(c10::Device device);

/// "3.21 GiB" (binary units, two decimals).
std::string gib_text(int64_t bytes);

}  // namespace poslens
