#include <ATen/Parallel.h>

#include <algorithm>
#include <thread>

#include "app/gui/torch_threads.h"

namespace poslens::gui {
void use_all_cores_for_torch() {
  at::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}
}  // namespace poslens::gui
