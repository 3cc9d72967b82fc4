// A read-only memory map of a whole file (move-only; unmapped on destruction).
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "engine/core/status.h"

namespace llmserve {

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // kNotFound when the file cannot be opened; an empty file maps to empty bytes().
  static Result<MappedFile> open(const std::string& path);

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }

 private:
  void reset();
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;
};

// True when [data, data + n) lies inside one live MappedFile's mapping.
bool in_mapped_file(const void* data, size_t n);

// Drops the calling process's pages of [data, data + n) (the whole pages inside it) from a
// MappedFile's read-only private mapping: madvise(MADV_DONTNEED). They leave the RSS; the page
// cache keeps them as clean, reclaimable pages. Touching them again re-reads them from the file, so
// any later reader still sees the file's bytes: it only pays the fault. Returns the bytes dropped:
// 0 when the range is not inside a live MappedFile (heap or anonymous memory, which
// MADV_DONTNEED would zero, is never touched), holds no whole page, or madvise fails.
size_t release_mapped_pages(const void* data, size_t n);

}  // namespace llmserve
