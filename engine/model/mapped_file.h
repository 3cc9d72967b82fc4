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

}  // namespace llmserve
