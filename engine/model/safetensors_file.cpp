#include "engine/model/safetensors_file.h"

#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

namespace llmserve {
namespace {

using kernels::DType;
using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

Result<DType> parse_dtype(const std::string& s, const std::string& where) {
  if (s == "F32") return DType::F32;
  if (s == "F16") return DType::F16;
  if (s == "BF16") return DType::BF16;
  if (s == "F64") return DType::F64;
  if (s == "I8") return DType::I8;
  if (s == "F8_E4M3") return DType::F8_E4M3;  // its scales: engine/model/fp8_checkpoint.h
  if (s == "I16") return DType::I16;
  if (s == "I32") return DType::I32;
  if (s == "I64") return DType::I64;
  return unimplemented(where + ": dtype '" + s + "' not supported");
}

Result<uint64_t> non_negative(const json& v, const std::string& where) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0)
    return static_cast<uint64_t>(v.get<int64_t>());
  return data_loss(where + " must be a non-negative integer");
}

Result<SafetensorsTensor> parse_entry(const std::string& name, const json& e,
                                      std::span<const std::byte> data, const std::string& origin) {
  const std::string where = origin + ": tensor '" + name + "'";
  if (!e.is_object()) return data_loss(where + ": entry is not an object");
  SafetensorsTensor t;
  t.name = name;
  auto dt = e.find("dtype");
  if (dt == e.end() || !dt->is_string()) return data_loss(where + ": missing string 'dtype'");
  LLMSERVE_ASSIGN_OR_RETURN(t.type, parse_dtype(dt->get<std::string>(), where));
  auto sh = e.find("shape");
  if (sh == e.end() || !sh->is_array() || sh->size() > 8) {
    return data_loss(where + ": 'shape' must be an array of at most 8 dims");
  }
  uint64_t elems = 1;
  for (const json& d : *sh) {
    LLMSERVE_ASSIGN_OR_RETURN(uint64_t n, non_negative(d, where + " shape entry"));
    if (n > (1ull << 48) || __builtin_mul_overflow(elems, n, &elems) || elems > (1ull << 62)) {
      return data_loss(where + ": shape too large");
    }
    t.shape.push_back(static_cast<int64_t>(n));
  }
  auto offs = e.find("data_offsets");
  if (offs == e.end() || !offs->is_array() || offs->size() != 2) {
    return data_loss(where + ": 'data_offsets' must be [begin, end]");
  }
  LLMSERVE_ASSIGN_OR_RETURN(uint64_t begin, non_negative((*offs)[0], where + " data_offsets[0]"));
  LLMSERVE_ASSIGN_OR_RETURN(uint64_t end, non_negative((*offs)[1], where + " data_offsets[1]"));
  if (begin > end || end > data.size()) {
    return data_loss(where + ": data_offsets [" + std::to_string(begin) + ", " +
                     std::to_string(end) + "] outside the data section (" +
                     std::to_string(data.size()) + " bytes)");
  }
  const uint64_t want = elems * kernels::dtype_info(t.type).block_bytes;
  if (end - begin != want) {
    return data_loss(where + ": data_offsets span " + std::to_string(end - begin) +
                     " bytes but shape and dtype need " + std::to_string(want));
  }
  t.data = data.subspan(begin, end - begin);
  return t;
}

}  // namespace

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  LLMSERVE_ASSIGN_OR_RETURN(MappedFile map, MappedFile::open(path));
  LLMSERVE_ASSIGN_OR_RETURN(auto f, parse(map.bytes(), path));
  f->map_ = std::move(map);
  f->path_ = path;
  return f;
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::parse(std::span<const std::byte> bytes,
                                                                std::string origin) {
  if (bytes.size() < 8) {
    return data_loss(origin + ": file of " + std::to_string(bytes.size()) +
                     " bytes is too short for the 8-byte header length");
  }
  uint64_t header_len;
  std::memcpy(&header_len, bytes.data(), 8);
  if (header_len > kMaxHeaderBytes || header_len > bytes.size() - 8) {
    return data_loss(origin + ": header length " + std::to_string(header_len) +
                     " at offset 0 past end of file (size " + std::to_string(bytes.size()) + ")");
  }
  const char* text = reinterpret_cast<const char*>(bytes.data() + 8);
  const json header = json::parse(text, text + header_len, nullptr, false);
  if (header.is_discarded() || !header.is_object()) {
    return data_loss(origin + ": header at offset 8 is not a JSON object");
  }
  const auto data = bytes.subspan(8 + header_len);
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  try {
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") continue;
      LLMSERVE_ASSIGN_OR_RETURN(SafetensorsTensor t, parse_entry(name, entry, data, origin));
      f->tensors_.push_back(std::move(t));
    }
  } catch (const std::exception& e) {
    return data_loss(origin + ": bad header: " + e.what());
  }
  return f;
}

}  // namespace llmserve
