// The comm's GPU comes from the CUDA driver already in the process (never one
// we load): a fake libcuda.so.1 stands in for it here.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "src/core/cuda_device.h"

namespace {

TEST(CudaDevice, UnknownWhenNoDriverIsLoaded) {
  // This test runs first in its own executable: nothing has loaded libcuda.so.1.
  ASSERT_EQ(dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD), nullptr) << "a real driver is loaded: test is moot";
  const ni::core::CudaDevice d = ni::core::current_cuda_device();
  EXPECT_EQ(d.ordinal, -1);
  EXPECT_EQ(d.pci_bus_id, "");
}

TEST(CudaDevice, ReadFromTheLoadedDriver) {
  void* lib = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_GLOBAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto set = reinterpret_cast<void (*)(int, const char*)>(dlsym(lib, "fake_cuda_set_current"));
  ASSERT_NE(set, nullptr);
  // No current context: unknown, not an error.
  set(-1, "");
  EXPECT_EQ(ni::core::current_cuda_device().ordinal, -1);
  set(3, "0000:1B:00.0");
  const ni::core::CudaDevice d = ni::core::current_cuda_device();
  EXPECT_EQ(d.ordinal, 3);
  EXPECT_EQ(d.pci_bus_id, "0000:1b:00.0");  // lower case, as Linux sysfs spells it
  // The driver refusing the bus id keeps the ordinal.
  set(4, "");
  auto fail_bus = reinterpret_cast<int (*)(char*, int, int)>(dlsym(lib, "cuDeviceGetPCIBusId"));
  char tiny[1];
  ASSERT_NE(fail_bus(tiny, 0, 4), 0);  // the fake refuses a buffer too small
  EXPECT_EQ(ni::core::current_cuda_device().ordinal, 4);
  // The plugin's reference was dropped: ours is the only one left.
  dlclose(lib);
  EXPECT_EQ(dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD), nullptr);
}

}  // namespace
