// GGUF (v2 / v3) reader: metadata of every value type, tensor infos and their data, read from a
// read-only memory map (open) or from caller-owned bytes (parse; the bytes must outlive the
// GgufFile). Every count, length, size and offset is checked against the file size; a malformed
// file gives a kDataLoss Status naming the field and its byte offset, never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/core/status.h"
#include "engine/model/mapped_file.h"
#include "llmserve/kernels/dtype.h"

namespace llmserve {

using kernels::DType;

// GGUF metadata value type ids.
enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// Bytes of one scalar of type t; 0 for string and array.
size_t gguf_scalar_bytes(GgufType t);
std::string_view gguf_type_name(GgufType t);

// One metadata value. Strings are views into the file bytes. Arrays: numeric / bool elements stay
// packed in the file (`raw`, little-endian), strings are a vector of views, nested arrays are
// GgufValues in `items`.
struct GgufValue {
  GgufType type = GgufType::kUint8;
  uint64_t u = 0;        // unsigned integers and bool
  int64_t i = 0;         // signed integers
  double f = 0;          // float32 / float64
  std::string_view str;  // kString

  GgufType elem_type = GgufType::kUint8;  // kArray only
  uint64_t count = 0;                     // kArray: number of elements
  const std::byte* raw = nullptr;         // kArray of numbers / bools: count packed elements
  std::vector<std::string_view> strings;  // kArray of strings
  std::vector<GgufValue> items;           // kArray of arrays

  bool is_integer() const;
  bool is_float() const { return type == GgufType::kFloat32 || type == GgufType::kFloat64; }
  // Integer value converted when it fits the target (any integer type or bool); nullopt otherwise.
  std::optional<int64_t> as_i64() const;
  std::optional<uint64_t> as_u64() const;
  std::optional<double> as_f64() const;  // floats and integers
  std::optional<bool> as_bool() const;
  std::optional<std::string_view> as_string() const;

  // Element i (< count) of a numeric or bool array as double / int64 (nullopt for other arrays
  // and for an unsigned element that does not fit int64).
  std::optional<double> array_f64(uint64_t index) const;
  std::optional<int64_t> array_i64(uint64_t index) const;
  // A one-line rendering for `inspect` (long arrays abbreviated).
  std::string to_string(size_t max_items = 8) const;
};

struct GgufKeyValue {
  std::string_view key;
  GgufValue value;
};

struct GgufTensorInfo {
  std::string name;
  DType type = DType::F32;
  std::vector<int64_t> ne;  // GGUF order: ne[0] is the row length (fastest dimension)
  int64_t num_elements = 0;
  uint64_t nbytes = 0;
  uint64_t offset = 0;  // absolute byte offset in the file
  std::span<const std::byte> data;

  // PyTorch order (ne reversed): a matrix is [rows, cols] = [out_features, in_features].
  std::vector<int64_t> shape() const { return {ne.rbegin(), ne.rend()}; }
};

class GgufFile {
 public:
  static Result<std::unique_ptr<GgufFile>> open(const std::string& path);
  static Result<std::unique_ptr<GgufFile>> parse(std::span<const std::byte> bytes);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute start of the tensor data
  uint64_t file_size() const { return bytes_.size(); }
  const std::string& path() const { return path_; }  // empty for parse()

  const std::vector<GgufKeyValue>& metadata() const { return kvs_; }  // in file order
  const GgufValue* find(std::string_view key) const;

  std::optional<uint32_t> get_u32(std::string_view key) const;
  std::optional<uint64_t> get_u64(std::string_view key) const;
  std::optional<int32_t> get_i32(std::string_view key) const;
  std::optional<int64_t> get_i64(std::string_view key) const;
  std::optional<float> get_f32(std::string_view key) const;  // float or integer values
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::string_view> get_string(std::string_view key) const;
  // Views into the file; nullopt when absent or not an array of strings.
  std::optional<std::span<const std::string_view>> get_string_array(std::string_view key) const;
  // Converted copies; nullopt when absent, not numeric, or an element does not fit.
  std::optional<std::vector<float>> get_f32_array(std::string_view key) const;
  std::optional<std::vector<int32_t>> get_i32_array(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;

 private:
  GgufFile() = default;
  Status parse_all();

  MappedFile map_;  // empty for parse()
  std::span<const std::byte> bytes_;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<GgufKeyValue> kvs_;
  std::unordered_map<std::string_view, size_t> kv_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
};

}  // namespace llmserve
