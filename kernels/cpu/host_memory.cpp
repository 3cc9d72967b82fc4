#include "llmserve/kernels/host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace llmserve::kernels {
namespace {

constexpr size_t kMappedFrom = size_t{1} << 20;
constexpr size_t kAlign = 64;
// Buffers of at least one huge page start on a huge-page boundary and ask for transparent huge
// pages: the packed weights and the KV cache are streamed, and 4 KiB pages cost a TLB miss every
// 4 KiB and stop the L2 streamer at each page boundary.
constexpr size_t kHugePage = size_t{2} << 20;

// Stored just below the returned pointer.
struct Header {
  size_t mapped_bytes;  // 0: from aligned_alloc
  void* base;
};

size_t page_size() {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

}  // namespace

void* host_alloc(size_t bytes) {
  static_assert(sizeof(Header) <= kAlign);
  if (bytes >= kMappedFrom) {
    const size_t page = page_size();
    const bool huge = bytes >= kHugePage && std::getenv("LLMSERVE_NO_HUGE_PAGES") == nullptr;
    const size_t align = huge ? kHugePage : page;
    // One page for the header, and room to move the data to an `align` boundary.
    const size_t total = (bytes + page + align - 1 + page - 1) / page * page;
    void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return nullptr;
    ::madvise(base, total, MADV_DONTFORK);
    const auto first = reinterpret_cast<uintptr_t>(base) + page;
    auto* data = reinterpret_cast<char*>((first + align - 1) / align * align);
    if (huge) ::madvise(data, bytes, MADV_HUGEPAGE);
    *reinterpret_cast<Header*>(data - sizeof(Header)) = Header{total, base};
    return data;  // zero: fresh anonymous pages
  }
  const size_t total = (bytes + kAlign + kAlign - 1) / kAlign * kAlign;
  void* base = std::aligned_alloc(kAlign, total);
  if (base == nullptr) return nullptr;
  std::memset(base, 0, total);
  auto* data = static_cast<char*>(base) + kAlign;
  *reinterpret_cast<Header*>(data - sizeof(Header)) = Header{0, base};
  return data;
}

void host_free(void* p) {
  if (p == nullptr) return;
  const Header h = *reinterpret_cast<Header*>(static_cast<char*>(p) - sizeof(Header));
  if (h.mapped_bytes > 0) {
    ::munmap(h.base, h.mapped_bytes);
  } else {
    std::free(h.base);
  }
}

}  // namespace llmserve::kernels
