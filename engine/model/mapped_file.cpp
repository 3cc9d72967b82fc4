#include "engine/model/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>

namespace llmserve {
namespace {

// Live mappings, [begin, end) by begin: release_mapped_pages drops pages of these only.
std::mutex& maps_mutex() {
  static std::mutex m;
  return m;
}
std::map<uintptr_t, uintptr_t>& live_maps() {
  static std::map<uintptr_t, uintptr_t> m;
  return m;
}

}  // namespace

bool in_mapped_file(const void* data, size_t n) {
  const auto begin = reinterpret_cast<uintptr_t>(data);
  std::lock_guard<std::mutex> lock(maps_mutex());
  const auto& maps = live_maps();
  auto it = maps.upper_bound(begin);
  if (it == maps.begin()) return false;
  --it;
  return begin >= it->first && begin + n <= it->second;
}

MappedFile::~MappedFile() {
  reset();
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), map_(other.map_) {
  other.data_ = nullptr;
  other.size_ = 0;
  other.map_ = nullptr;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(map_, other.map_);
  }
  return *this;
}

void MappedFile::reset() {
  if (map_ != nullptr) {
    {
      std::lock_guard<std::mutex> lock(maps_mutex());
      live_maps().erase(reinterpret_cast<uintptr_t>(map_));
    }
    munmap(map_, size_);
  }
  map_ = nullptr;
  data_ = nullptr;
  size_ = 0;
}

size_t release_mapped_pages(const void* data, size_t n) {
  static const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (begin + page - 1) / page * page;  // whole pages only: a neighbour's
  const uintptr_t last = (begin + n) / page * page;          // bytes stay mapped
  if (data == nullptr || last <= first || !in_mapped_file(data, n)) return 0;
  if (madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) return 0;
  return last - first;
}

Result<MappedFile> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return not_found("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return not_found("'" + path + "' is not a regular file");
  }
  MappedFile f;
  f.size_ = static_cast<size_t>(st.st_size);
  if (f.size_ > 0) {
    void* p = mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      f.size_ = 0;
      return internal_error("cannot map '" + path + "': " + std::strerror(err));
    }
    f.map_ = p;
    f.data_ = static_cast<const std::byte*>(p);
    std::lock_guard<std::mutex> lock(maps_mutex());
    live_maps()[reinterpret_cast<uintptr_t>(p)] = reinterpret_cast<uintptr_t>(p) + f.size_;
  }
  ::close(fd);
  return f;
}

}  // namespace llmserve
