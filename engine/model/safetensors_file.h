// Safetensors reader: 8-byte little-endian header length, a JSON header of
// {name: {dtype, shape, data_offsets: [begin, end]}} (offsets relative to the end of the header),
// then the data. dtype, shape and offsets are checked against the file; "__metadata__" is ignored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/model/mapped_file.h"
#include "llmserve/kernels/dtype.h"

namespace llmserve {

struct SafetensorsTensor {
  std::string name;
  kernels::DType type = kernels::DType::F32;
  std::vector<int64_t> shape;  // as stored (PyTorch order)
  std::span<const std::byte> data;
};

class SafetensorsFile {
 public:
  static Result<std::unique_ptr<SafetensorsFile>> open(const std::string& path);
  // The bytes must outlive the result. `origin` names the file in error messages.
  static Result<std::unique_ptr<SafetensorsFile>> parse(std::span<const std::byte> bytes,
                                                        std::string origin = "safetensors");

  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const std::string& path() const { return path_; }

  // Hands the memory map to the caller (the tensor spans stay valid while it lives).
  MappedFile release_map() { return std::move(map_); }

 private:
  MappedFile map_;
  std::string path_;
  std::vector<SafetensorsTensor> tensors_;
};

}  // namespace llmserve
