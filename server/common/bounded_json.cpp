#include "server/common/bounded_json.h"

#include <bit>
#include <optional>
#include <string>
#include <vector>

#include "config/value_parse.h"
#include "server/common/field_checks.h"

namespace llmserve {

namespace {

using nlohmann::json;

// glibc malloc on 64-bit: 8 bytes of header, 16-byte granules, 32-byte smallest block.
constexpr uint64_t block(uint64_t request) {
  const uint64_t b = (request + 8 + 15) & ~uint64_t{15};
  return b < 32 ? 32 : b;
}

// nlohmann::json with libstdc++: a value is 16 bytes (type tag + one word), held inline in its
// array's storage or its object member's node; strings, arrays and objects own heap blocks.
constexpr uint64_t kValueBytes = sizeof(json);
constexpr uint64_t kArrayBytes = block(sizeof(json::array_t));
constexpr uint64_t kObjectBytes = block(sizeof(json::object_t));
constexpr uint64_t kStringBytes = block(sizeof(json::string_t));
// A std::map node: the red-black links (32 bytes), the key and the value.
constexpr uint64_t kMemberBytes = block(32 + sizeof(json::string_t) + sizeof(json));

// Heap bytes of a std::string's characters beyond its 15-byte inline buffer.
uint64_t string_heap(size_t length) {
  return length > 15 ? block(length + 1) : 0;
}

// nlohmann's SAX interface: counts levels, values and estimated tree bytes; returns false (which
// stops the parser at once) past a bound.
class ShapeCounter {
 public:
  enum class Stop { kNone, kDepth, kBytes, kSyntax };

  explicit ShapeCounter(const JsonBounds& bounds) : bounds_(bounds) {}

  bool null() { return value(0); }
  bool boolean(bool) { return value(0); }
  bool number_integer(json::number_integer_t) { return value(0); }
  bool number_unsigned(json::number_unsigned_t) { return value(0); }
  bool number_float(json::number_float_t, const json::string_t&) { return value(0); }
  bool string(json::string_t& s) { return value(kStringBytes + string_heap(s.size())); }
  bool binary(json::binary_t&) { return value(0); }  // never produced by JSON text

  bool start_object(std::size_t) { return open(kObjectBytes, /*array=*/false); }
  bool key(json::string_t& k) {
    ++shape_.values;
    return add(kMemberBytes + string_heap(k.size()));
  }
  bool end_object() {
    open_.pop_back();
    return true;
  }

  bool start_array(std::size_t) { return open(kArrayBytes, /*array=*/true); }
  bool end_array() {
    const uint64_t n = open_.back();
    open_.pop_back();
    if (n == 0) return true;
    // emplace_back doubles the capacity: the storage ends at the next power of two, and the last
    // doubling held the old storage beside the new one.
    const uint64_t capacity = std::bit_ceil(n);
    const uint64_t storage =
        block(capacity * kValueBytes) + (capacity > 1 ? block(capacity / 2 * kValueBytes) : 0);
    return add(storage > n * kValueBytes ? storage - n * kValueBytes : 0);
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    if (stop_ == Stop::kNone) {
      stop_ = Stop::kSyntax;
      syntax_ = e.what();
    }
    return false;
  }

  Stop stop() const { return stop_; }
  const std::string& syntax() const { return syntax_; }
  const JsonShape& shape() const { return shape_; }

 private:
  static constexpr uint64_t kNotArray = ~uint64_t{0};

  // A value in its parent: array storage grows by one slot (its slack is added at the close);
  // an object member's slot was counted with its key.
  bool value(uint64_t heap) {
    ++shape_.values;
    uint64_t slot = 0;
    if (!open_.empty() && open_.back() != kNotArray) {
      ++open_.back();
      slot = kValueBytes;
    }
    return add(slot + heap);
  }

  bool open(uint64_t heap, bool array) {
    if (!value(heap)) return false;
    if (static_cast<int64_t>(open_.size()) >= bounds_.max_depth) {
      stop_ = Stop::kDepth;
      return false;
    }
    open_.push_back(array ? 0 : kNotArray);
    if (static_cast<int32_t>(open_.size()) > shape_.depth) {
      shape_.depth = static_cast<int32_t>(open_.size());
    }
    return true;
  }

  bool add(uint64_t bytes) {
    shape_.tree_bytes += bytes;
    if (shape_.tree_bytes <= bounds_.max_tree_bytes) return true;
    stop_ = Stop::kBytes;
    return false;
  }

  const JsonBounds& bounds_;
  JsonShape shape_;
  // One entry per open container: an array's element count, or kNotArray for an object. At most
  // max_depth entries.
  std::vector<uint64_t> open_;
  Stop stop_ = Stop::kNone;
  std::string syntax_;
};

Status shape_error(std::string_view field, const std::string& what) {
  if (field.empty()) return invalid_argument("request body " + what);
  return field_error(field, what);
}

// The one pass; `syntax_ok` (when given) turns a syntax error into OK with *syntax_ok false.
Result<JsonShape> measure(std::string_view text, const JsonBounds& bounds, std::string_view field,
                          bool* syntax_ok) {
  ShapeCounter counter(bounds);
  const bool ok = json::sax_parse(text.begin(), text.end(), &counter);
  if (syntax_ok != nullptr) *syntax_ok = true;
  switch (counter.stop()) {
    case ShapeCounter::Stop::kDepth:
      return shape_error(field, "nests arrays and objects deeper than " +
                                    std::to_string(bounds.max_depth) +
                                    " levels (server.max_json_depth)");
    case ShapeCounter::Stop::kBytes:
      return shape_error(field, "would take more than " + format_size(bounds.max_tree_bytes) +
                                    " once parsed (server.max_json_memory)");
    case ShapeCounter::Stop::kSyntax:
      if (syntax_ok != nullptr) {
        *syntax_ok = false;
        return counter.shape();
      }
      return shape_error(field, "is not valid JSON: " + counter.syntax());
    case ShapeCounter::Stop::kNone:
      break;
  }
  if (!ok) return shape_error(field, "is not valid JSON");
  return counter.shape();
}

}  // namespace

Result<JsonShape> measure_json(std::string_view text, const JsonBounds& bounds,
                               std::string_view field) {
  return measure(text, bounds, field, nullptr);
}

Result<nlohmann::json> parse_bounded_json(std::string_view text, const JsonBounds& bounds,
                                          std::string_view field) {
  LLMSERVE_RETURN_IF_ERROR(measure(text, bounds, field, nullptr).status());
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return shape_error(field, "is not valid JSON");  // measured as valid
  return j;
}

Result<nlohmann::ordered_json> parse_bounded_ordered_json(std::string_view text,
                                                          const JsonBounds& bounds,
                                                          std::string_view field) {
  LLMSERVE_RETURN_IF_ERROR(measure(text, bounds, field, nullptr).status());
  auto j = nlohmann::ordered_json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return shape_error(field, "is not valid JSON");
  return j;
}

Result<std::optional<nlohmann::json>> parse_bounded_json_if_valid(std::string_view text,
                                                                  const JsonBounds& bounds,
                                                                  std::string_view field) {
  bool syntax_ok = true;
  LLMSERVE_RETURN_IF_ERROR(measure(text, bounds, field, &syntax_ok).status());
  if (!syntax_ok) return std::optional<nlohmann::json>();
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::optional<nlohmann::json>();
  return std::optional<nlohmann::json>(std::move(j));
}

}  // namespace llmserve
