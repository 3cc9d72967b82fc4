#include "engine/model/gguf_file.h"

#include <cstring>
#include <limits>

namespace llmserve {
namespace {

constexpr int kMaxArrayDepth = 8;
constexpr uint32_t kMaxDims = 4;

// Sequential little-endian reader over the file bytes; every read is bounds-checked and a
// failure names the field and its offset.
class Cursor {
 public:
  explicit Cursor(std::span<const std::byte> bytes) : bytes_(bytes) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }
  const std::byte* here() const { return bytes_.data() + pos_; }

  Status need(uint64_t n, const std::string& what) const {
    if (n > remaining()) {
      return data_loss("gguf: " + what + " at offset " + std::to_string(pos_) + " needs " +
                       std::to_string(n) + " bytes, past end of file (size " +
                       std::to_string(bytes_.size()) + ")");
    }
    return Status::ok();
  }

  template <typename T>
  Result<T> read(const std::string& what) {
    LLMSERVE_RETURN_IF_ERROR(need(sizeof(T), what));
    T v;
    std::memcpy(&v, here(), sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  void skip(uint64_t n) { pos_ += n; }

  Result<std::string_view> read_string(const std::string& what) {
    const uint64_t at = pos_;
    LLMSERVE_ASSIGN_OR_RETURN(uint64_t len, read<uint64_t>(what + " length"));
    if (len > remaining()) {
      return data_loss("gguf: " + what + " length " + std::to_string(len) + " at offset " +
                       std::to_string(at) + " past end of file (size " +
                       std::to_string(bytes_.size()) + ")");
    }
    std::string_view s(reinterpret_cast<const char*>(here()), static_cast<size_t>(len));
    pos_ += len;
    return s;
  }

 private:
  std::span<const std::byte> bytes_;
  uint64_t pos_ = 0;
};

std::string at_offset(uint64_t off) {
  return " at offset " + std::to_string(off);
}

Status read_value(Cursor& c, GgufType type, GgufValue& out, int depth, const std::string& what) {
  out.type = type;
  switch (type) {
    case GgufType::kUint8: {
      LLMSERVE_ASSIGN_OR_RETURN(out.u, c.read<uint8_t>(what));
      break;
    }
    case GgufType::kUint16: {
      LLMSERVE_ASSIGN_OR_RETURN(out.u, c.read<uint16_t>(what));
      break;
    }
    case GgufType::kUint32: {
      LLMSERVE_ASSIGN_OR_RETURN(out.u, c.read<uint32_t>(what));
      break;
    }
    case GgufType::kUint64: {
      LLMSERVE_ASSIGN_OR_RETURN(out.u, c.read<uint64_t>(what));
      break;
    }
    case GgufType::kInt8: {
      LLMSERVE_ASSIGN_OR_RETURN(out.i, c.read<int8_t>(what));
      break;
    }
    case GgufType::kInt16: {
      LLMSERVE_ASSIGN_OR_RETURN(out.i, c.read<int16_t>(what));
      break;
    }
    case GgufType::kInt32: {
      LLMSERVE_ASSIGN_OR_RETURN(out.i, c.read<int32_t>(what));
      break;
    }
    case GgufType::kInt64: {
      LLMSERVE_ASSIGN_OR_RETURN(out.i, c.read<int64_t>(what));
      break;
    }
    case GgufType::kFloat32: {
      LLMSERVE_ASSIGN_OR_RETURN(out.f, c.read<float>(what));
      break;
    }
    case GgufType::kFloat64: {
      LLMSERVE_ASSIGN_OR_RETURN(out.f, c.read<double>(what));
      break;
    }
    case GgufType::kBool: {
      LLMSERVE_ASSIGN_OR_RETURN(uint8_t b, c.read<uint8_t>(what));
      out.u = b != 0;
      break;
    }
    case GgufType::kString: {
      LLMSERVE_ASSIGN_OR_RETURN(out.str, c.read_string(what));
      break;
    }
    case GgufType::kArray: {
      if (depth >= kMaxArrayDepth) {
        return data_loss("gguf: " + what + at_offset(c.pos()) + ": arrays nested deeper than " +
                         std::to_string(kMaxArrayDepth));
      }
      const uint64_t type_at = c.pos();
      LLMSERVE_ASSIGN_OR_RETURN(uint32_t et, c.read<uint32_t>(what + " element type"));
      if (et > static_cast<uint32_t>(GgufType::kFloat64)) {
        return data_loss("gguf: " + what + at_offset(type_at) + ": unknown array element type " +
                         std::to_string(et));
      }
      out.elem_type = static_cast<GgufType>(et);
      const uint64_t count_at = c.pos();
      LLMSERVE_ASSIGN_OR_RETURN(out.count, c.read<uint64_t>(what + " array length"));
      // Every element takes at least min_bytes, so a count the file cannot hold is rejected
      // before anything is allocated.
      const size_t elem = gguf_scalar_bytes(out.elem_type);
      const uint64_t min_bytes = elem != 0 ? elem : (out.elem_type == GgufType::kString ? 8 : 12);
      if (out.count > c.remaining() / min_bytes) {
        return data_loss("gguf: " + what + " array length " + std::to_string(out.count) +
                         at_offset(count_at) + " past end of file (" +
                         std::to_string(c.remaining()) + " bytes left)");
      }
      if (elem != 0) {
        out.raw = c.here();
        c.skip(out.count * elem);
      } else if (out.elem_type == GgufType::kString) {
        out.strings.reserve(out.count);
        for (uint64_t k = 0; k < out.count; ++k) {
          LLMSERVE_ASSIGN_OR_RETURN(std::string_view s,
                                    c.read_string(what + "[" + std::to_string(k) + "]"));
          out.strings.push_back(s);
        }
      } else {
        out.items.resize(out.count);
        for (uint64_t k = 0; k < out.count; ++k) {
          LLMSERVE_RETURN_IF_ERROR(read_value(c, GgufType::kArray, out.items[k], depth + 1,
                                              what + "[" + std::to_string(k) + "]"));
        }
      }
      break;
    }
    default:
      return data_loss("gguf: " + what + ": unknown value type " +
                       std::to_string(static_cast<uint32_t>(type)));
  }
  return Status::ok();
}

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

}  // namespace

Result<std::unique_ptr<GgufFile>> GgufFile::open(const std::string& path) {
  LLMSERVE_ASSIGN_OR_RETURN(MappedFile map, MappedFile::open(path));
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->map_ = std::move(map);
  f->bytes_ = f->map_.bytes();
  f->path_ = path;
  Status st = f->parse_all();
  if (!st.is_ok()) return Status(st.code(), st.message() + " ('" + path + "')");
  return f;
}

Result<std::unique_ptr<GgufFile>> GgufFile::parse(std::span<const std::byte> bytes) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->bytes_ = bytes;
  LLMSERVE_RETURN_IF_ERROR(f->parse_all());
  return f;
}

Status GgufFile::parse_all() {
  Cursor c(bytes_);
  LLMSERVE_ASSIGN_OR_RETURN(uint32_t magic, c.read<uint32_t>("magic"));
  if (magic != 0x46554747u) {  // "GGUF"
    return data_loss("gguf: bad magic at offset 0 (not a GGUF file)");
  }
  LLMSERVE_ASSIGN_OR_RETURN(version_, c.read<uint32_t>("version"));
  if (version_ != 2 && version_ != 3) {
    return unimplemented("gguf: version " + std::to_string(version_) +
                         " at offset 4 not supported (2 and 3 are)");
  }
  const uint64_t tc_at = c.pos();
  LLMSERVE_ASSIGN_OR_RETURN(uint64_t n_tensors, c.read<uint64_t>("tensor count"));
  const uint64_t kc_at = c.pos();
  LLMSERVE_ASSIGN_OR_RETURN(uint64_t n_kv, c.read<uint64_t>("metadata count"));
  // Smallest key-value: 8 (key length) + 4 (type) + 1; smallest tensor info: 8 + 4 + 8 + 4 + 8.
  if (n_kv > c.remaining() / 13) {
    return data_loss("gguf: metadata count " + std::to_string(n_kv) + at_offset(kc_at) +
                     " past end of file (size " + std::to_string(bytes_.size()) + ")");
  }
  if (n_tensors > c.remaining() / 32) {
    return data_loss("gguf: tensor count " + std::to_string(n_tensors) + at_offset(tc_at) +
                     " past end of file (size " + std::to_string(bytes_.size()) + ")");
  }

  kvs_.reserve(n_kv);
  for (uint64_t k = 0; k < n_kv; ++k) {
    const std::string what = "key #" + std::to_string(k);
    LLMSERVE_ASSIGN_OR_RETURN(std::string_view key, c.read_string(what));
    const std::string kwhat = what + " '" + std::string(key) + "'";
    const uint64_t type_at = c.pos();
    LLMSERVE_ASSIGN_OR_RETURN(uint32_t type, c.read<uint32_t>(kwhat + " type"));
    if (type > static_cast<uint32_t>(GgufType::kFloat64)) {
      return data_loss("gguf: " + kwhat + at_offset(type_at) + ": unknown value type " +
                       std::to_string(type));
    }
    GgufKeyValue kv{key, {}};
    LLMSERVE_RETURN_IF_ERROR(read_value(c, static_cast<GgufType>(type), kv.value, 0, kwhat));
    if (!kv_index_.emplace(key, kvs_.size()).second) {
      return data_loss("gguf: duplicate " + kwhat + at_offset(type_at));
    }
    kvs_.push_back(std::move(kv));
  }

  if (const GgufValue* a = find("general.alignment")) {
    const auto v = a->type == GgufType::kUint32 ? a->as_u64() : std::nullopt;
    if (!v || *v == 0 || (*v & (*v - 1)) != 0) {
      return data_loss("gguf: general.alignment must be a uint32 power of two, got " +
                       a->to_string());
    }
    alignment_ = *v;
  }

  tensors_.reserve(n_tensors);
  for (uint64_t t = 0; t < n_tensors; ++t) {
    const std::string what = "tensor #" + std::to_string(t);
    LLMSERVE_ASSIGN_OR_RETURN(std::string_view name, c.read_string(what + " name"));
    GgufTensorInfo info;
    info.name = std::string(name);
    const std::string twhat = "tensor '" + info.name + "'";
    const uint64_t dims_at = c.pos();
    LLMSERVE_ASSIGN_OR_RETURN(uint32_t n_dims, c.read<uint32_t>(twhat + " dimension count"));
    if (n_dims == 0 || n_dims > kMaxDims) {
      return data_loss("gguf: " + twhat + at_offset(dims_at) + ": dimension count " +
                       std::to_string(n_dims) + " not in 1.." + std::to_string(kMaxDims));
    }
    uint64_t elems = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t at = c.pos();
      LLMSERVE_ASSIGN_OR_RETURN(uint64_t ne,
                                c.read<uint64_t>(twhat + " ne[" + std::to_string(d) + "]"));
      if (ne == 0 || ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          mul_overflows(elems, ne, &elems) ||
          elems > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return data_loss("gguf: " + twhat + at_offset(at) + ": bad dimension ne[" +
                         std::to_string(d) + "] = " + std::to_string(ne));
      }
      info.ne.push_back(static_cast<int64_t>(ne));
    }
    info.num_elements = static_cast<int64_t>(elems);
    const uint64_t type_at = c.pos();
    LLMSERVE_ASSIGN_OR_RETURN(uint32_t type_id, c.read<uint32_t>(twhat + " type"));
    const auto dinfo = kernels::dtype_info(type_id);
    if (!dinfo || dinfo->type == kernels::DType::F8_E4M3) {
      return unimplemented("gguf: " + twhat + at_offset(type_at) + ": unsupported tensor type id " +
                           std::to_string(type_id));
    }
    info.type = dinfo->type;
    if (static_cast<uint64_t>(info.ne[0]) % dinfo->block_elems != 0) {
      return data_loss("gguf: " + twhat + ": row length " + std::to_string(info.ne[0]) +
                       " is not a multiple of the " + std::string(dinfo->name) + " block size " +
                       std::to_string(dinfo->block_elems));
    }
    if (mul_overflows(elems / dinfo->block_elems, dinfo->block_bytes, &info.nbytes)) {
      return data_loss("gguf: " + twhat + ": byte size overflows");
    }
    LLMSERVE_ASSIGN_OR_RETURN(info.offset, c.read<uint64_t>(twhat + " data offset"));
    if (info.offset % alignment_ != 0) {
      return data_loss("gguf: " + twhat + ": data offset " + std::to_string(info.offset) +
                       " is not a multiple of the alignment " + std::to_string(alignment_));
    }
    tensors_.push_back(std::move(info));
  }

  // Tensor data starts at the next multiple of the alignment after the header.
  data_offset_ = c.pos();
  if (data_offset_ % alignment_ != 0) data_offset_ += alignment_ - data_offset_ % alignment_;
  const uint64_t size = bytes_.size();
  tensor_index_.clear();
  for (size_t t = 0; t < tensors_.size(); ++t) {
    GgufTensorInfo& info = tensors_[t];
    const uint64_t rel = info.offset;
    uint64_t end = 0;
    if (__builtin_add_overflow(data_offset_, rel, &info.offset) ||
        __builtin_add_overflow(info.offset, info.nbytes, &end) || end > size) {
      return data_loss("gguf: tensor '" + info.name + "': data offset " +
                       std::to_string(data_offset_) + " + " + std::to_string(rel) + " + size " +
                       std::to_string(info.nbytes) + " past end of file (size " +
                       std::to_string(size) + ")");
    }
    info.data = bytes_.subspan(info.offset, info.nbytes);
    if (!tensor_index_.emplace(info.name, t).second) {
      return data_loss("gguf: duplicate tensor name '" + info.name + "'");
    }
  }
  return Status::ok();
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

std::optional<uint32_t> GgufFile::get_u32(std::string_view key) const {
  const auto v = get_u64(key);
  if (!v || *v > std::numeric_limits<uint32_t>::max()) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

std::optional<uint64_t> GgufFile::get_u64(std::string_view key) const {
  const GgufValue* v = find(key);
  return v && v->type != GgufType::kBool ? v->as_u64() : std::nullopt;
}

std::optional<int32_t> GgufFile::get_i32(std::string_view key) const {
  const auto v = get_i64(key);
  if (!v || *v < std::numeric_limits<int32_t>::min() || *v > std::numeric_limits<int32_t>::max()) {
    return std::nullopt;
  }
  return static_cast<int32_t>(*v);
}

std::optional<int64_t> GgufFile::get_i64(std::string_view key) const {
  const GgufValue* v = find(key);
  return v && v->type != GgufType::kBool ? v->as_i64() : std::nullopt;
}

std::optional<float> GgufFile::get_f32(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  const auto d = v->as_f64();
  if (!d) return std::nullopt;
  return static_cast<float>(*d);
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? v->as_bool() : std::nullopt;
}

std::optional<std::string_view> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? v->as_string() : std::nullopt;
}

std::optional<std::span<const std::string_view>> GgufFile::get_string_array(
    std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v || v->type != GgufType::kArray || v->elem_type != GgufType::kString) return std::nullopt;
  return std::span<const std::string_view>(v->strings);
}

std::optional<std::vector<float>> GgufFile::get_f32_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v || v->type != GgufType::kArray || v->raw == nullptr) return std::nullopt;
  std::vector<float> out(v->count);
  for (uint64_t k = 0; k < v->count; ++k) {
    const auto d = v->array_f64(k);
    if (!d) return std::nullopt;
    out[k] = static_cast<float>(*d);
  }
  return out;
}

std::optional<std::vector<int32_t>> GgufFile::get_i32_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v || v->type != GgufType::kArray || v->raw == nullptr ||
      v->elem_type == GgufType::kFloat32 || v->elem_type == GgufType::kFloat64) {
    return std::nullopt;
  }
  std::vector<int32_t> out(v->count);
  for (uint64_t k = 0; k < v->count; ++k) {
    const auto d = v->array_i64(k);
    if (!d || *d < std::numeric_limits<int32_t>::min() ||
        *d > std::numeric_limits<int32_t>::max()) {
      return std::nullopt;
    }
    out[k] = static_cast<int32_t>(*d);
  }
  return out;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace llmserve
