// Which GPU a communicator runs on, asked of the CUDA driver the process has
// already loaded (never loaded by us: the plugin must not pull CUDA into a
// process, and builds and runs without it).
#pragma once

#include <string>

namespace ni::core {

struct CudaDevice {
  int ordinal = -1;        // CUDA device ordinal of the calling thread's current context; -1 unknown
  std::string pci_bus_id;  // "0000:1b:00.0" (lower case); "" unknown
};

// The calling thread's current device (NCCL calls the profiler's init on a
// thread with the communicator's device current). Unknown when libcuda.so.1
// is not loaded, has no current context, or does not answer.
CudaDevice current_cuda_device() noexcept;

}  // namespace ni::core
