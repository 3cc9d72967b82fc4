// host_alloc: zeroed, aligned buffers; the large ones on a huge-page boundary and marked for
// transparent huge pages, as the kernel reports them in /proc/self/smaps (VmFlags "hg").
#include "llmserve/kernels/host_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace llmserve::kernels {
namespace {

// The VmFlags line of the mapping holding addr, or "" when none is found.
std::string vm_flags_of(const void* addr) {
  std::ifstream smaps("/proc/self/smaps");
  const auto a = reinterpret_cast<uintptr_t>(addr);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = a >= lo && a < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

bool thp_built() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  return f.good();
}

TEST(HostMemory, SmallBuffersAreZeroedAndAligned) {
  for (size_t bytes : {size_t{1}, size_t{100}, size_t{4096}, size_t{1} << 20}) {
    auto* p = static_cast<unsigned char*>(host_alloc(bytes));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(p[i], 0) << bytes;
    host_free(p);
  }
}

TEST(HostMemory, LargeBuffersStartOnHugePagesAndAskForThem) {
  if (!thp_built()) GTEST_SKIP() << "kernel without transparent huge pages";
  constexpr size_t kHuge = size_t{2} << 20;
  for (size_t bytes : {kHuge, 3 * kHuge + 12345, 64 * kHuge}) {
    auto* p = static_cast<unsigned char*>(host_alloc(bytes));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHuge, 0u) << bytes;
    p[0] = 1;
    p[bytes - 1] = 2;
    EXPECT_EQ(p[bytes / 2], 0);
    EXPECT_NE(vm_flags_of(p).find(" hg"), std::string::npos) << vm_flags_of(p);
    host_free(p);
  }
}

TEST(HostMemory, HugePagesCanBeTurnedOff) {
  ::setenv("LLMSERVE_NO_HUGE_PAGES", "1", 1);
  void* p = host_alloc(size_t{8} << 20);
  ::unsetenv("LLMSERVE_NO_HUGE_PAGES");
  ASSERT_NE(p, nullptr);
  const std::string flags = vm_flags_of(p);
  EXPECT_FALSE(flags.empty());
  EXPECT_EQ(flags.find(" hg"), std::string::npos) << flags;
  host_free(p);
}

}  // namespace
}  // namespace llmserve::kernels
