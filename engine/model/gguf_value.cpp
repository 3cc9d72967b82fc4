#include <cstring>
#include <limits>
#include <sstream>

#include "engine/model/gguf_file.h"

namespace llmserve {
namespace {

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

bool is_signed_int(GgufType t) {
  return t == GgufType::kInt8 || t == GgufType::kInt16 || t == GgufType::kInt32 ||
         t == GgufType::kInt64;
}
bool is_unsigned_int(GgufType t) {
  return t == GgufType::kUint8 || t == GgufType::kUint16 || t == GgufType::kUint32 ||
         t == GgufType::kUint64;
}

}  // namespace

size_t gguf_scalar_bytes(GgufType t) {
  switch (t) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool:
      return 1;
    case GgufType::kUint16:
    case GgufType::kInt16:
      return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32:
      return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
      return 8;
    default:
      return 0;
  }
}

std::string_view gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::kUint8:
      return "uint8";
    case GgufType::kInt8:
      return "int8";
    case GgufType::kUint16:
      return "uint16";
    case GgufType::kInt16:
      return "int16";
    case GgufType::kUint32:
      return "uint32";
    case GgufType::kInt32:
      return "int32";
    case GgufType::kFloat32:
      return "float32";
    case GgufType::kBool:
      return "bool";
    case GgufType::kString:
      return "string";
    case GgufType::kArray:
      return "array";
    case GgufType::kUint64:
      return "uint64";
    case GgufType::kInt64:
      return "int64";
    case GgufType::kFloat64:
      return "float64";
  }
  return "unknown";
}

bool GgufValue::is_integer() const {
  return is_signed_int(type) || is_unsigned_int(type);
}

std::optional<int64_t> GgufValue::as_i64() const {
  if (is_signed_int(type)) return i;
  if (is_unsigned_int(type) || type == GgufType::kBool) {
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  return std::nullopt;
}

std::optional<uint64_t> GgufValue::as_u64() const {
  if (is_unsigned_int(type) || type == GgufType::kBool) return u;
  if (is_signed_int(type) && i >= 0) return static_cast<uint64_t>(i);
  return std::nullopt;
}

std::optional<double> GgufValue::as_f64() const {
  if (is_float()) return f;
  if (is_signed_int(type)) return static_cast<double>(i);
  if (is_unsigned_int(type)) return static_cast<double>(u);
  return std::nullopt;
}

std::optional<bool> GgufValue::as_bool() const {
  if (type == GgufType::kBool) return u != 0;
  return std::nullopt;
}

std::optional<std::string_view> GgufValue::as_string() const {
  if (type == GgufType::kString) return str;
  return std::nullopt;
}

std::optional<double> GgufValue::array_f64(uint64_t index) const {
  if (type != GgufType::kArray || raw == nullptr || index >= count) return std::nullopt;
  const std::byte* p = raw + index * gguf_scalar_bytes(elem_type);
  switch (elem_type) {
    case GgufType::kUint8:
      return load<uint8_t>(p);
    case GgufType::kInt8:
      return load<int8_t>(p);
    case GgufType::kUint16:
      return load<uint16_t>(p);
    case GgufType::kInt16:
      return load<int16_t>(p);
    case GgufType::kUint32:
      return load<uint32_t>(p);
    case GgufType::kInt32:
      return load<int32_t>(p);
    case GgufType::kFloat32:
      return load<float>(p);
    case GgufType::kBool:
      return load<uint8_t>(p) != 0 ? 1.0 : 0.0;
    case GgufType::kUint64:
      return static_cast<double>(load<uint64_t>(p));
    case GgufType::kInt64:
      return static_cast<double>(load<int64_t>(p));
    case GgufType::kFloat64:
      return load<double>(p);
    default:
      return std::nullopt;
  }
}

std::optional<int64_t> GgufValue::array_i64(uint64_t index) const {
  if (type != GgufType::kArray || raw == nullptr || index >= count) return std::nullopt;
  const std::byte* p = raw + index * gguf_scalar_bytes(elem_type);
  switch (elem_type) {
    case GgufType::kUint8:
      return load<uint8_t>(p);
    case GgufType::kInt8:
      return load<int8_t>(p);
    case GgufType::kUint16:
      return load<uint16_t>(p);
    case GgufType::kInt16:
      return load<int16_t>(p);
    case GgufType::kUint32:
      return load<uint32_t>(p);
    case GgufType::kInt32:
      return load<int32_t>(p);
    case GgufType::kBool:
      return load<uint8_t>(p) != 0 ? 1 : 0;
    case GgufType::kInt64:
      return load<int64_t>(p);
    case GgufType::kUint64: {
      const uint64_t v = load<uint64_t>(p);
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(v);
    }
    default:
      return std::nullopt;
  }
}

std::string GgufValue::to_string(size_t max_items) const {
  std::ostringstream os;
  switch (type) {
    case GgufType::kString: {
      std::string_view s = str;
      const bool cut = s.size() > 80;
      if (cut) s = s.substr(0, 80);
      os << '"';
      for (char c : s) os << (c == '\n' ? ' ' : c);
      os << (cut ? "...\"" : "\"");
      break;
    }
    case GgufType::kBool:
      os << (u ? "true" : "false");
      break;
    case GgufType::kFloat32:
    case GgufType::kFloat64:
      os << f;
      break;
    case GgufType::kArray: {
      os << "[" << gguf_type_name(elem_type) << " x " << count << "]";
      const uint64_t n = std::min<uint64_t>(count, max_items);
      os << " [";
      for (uint64_t k = 0; k < n; ++k) {
        if (k) os << ", ";
        if (elem_type == GgufType::kString) {
          os << '"' << strings[k].substr(0, 24) << '"';
        } else if (elem_type == GgufType::kArray) {
          os << items[k].to_string(2);
        } else if (elem_type == GgufType::kFloat32 || elem_type == GgufType::kFloat64) {
          os << *array_f64(k);
        } else if (auto v = array_i64(k)) {
          os << *v;
        } else {
          os << *array_f64(k);
        }
      }
      os << (count > n ? ", ...]" : "]");
      break;
    }
    default:
      if (is_signed_int(type))
        os << i;
      else
        os << u;
  }
  return os.str();
}

}  // namespace llmserve
