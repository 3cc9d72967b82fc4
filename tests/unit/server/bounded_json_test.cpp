// server/common/bounded_json: the depth limit at and one past its value, the tree budget, and
// that text past a bound allocates no tree (global operator new is counted in this binary).
#include "server/common/bounded_json.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace {

// Live heap bytes (malloc's usable sizes) and their peak while counting is on.
std::atomic<bool> g_counting{false};
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};

void* counted_alloc(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  if (g_counting.load(std::memory_order_relaxed)) {
    const int64_t live = g_live.fetch_add(static_cast<int64_t>(malloc_usable_size(p))) +
                         static_cast<int64_t>(malloc_usable_size(p));
    int64_t peak = g_peak.load();
    while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
    }
  }
  return p;
}

void counted_free(void* p) {
  if (p != nullptr && g_counting.load(std::memory_order_relaxed)) {
    g_live.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)));
  }
  std::free(p);
}

}  // namespace

void* operator new(std::size_t n) {
  return counted_alloc(n);
}
void* operator new[](std::size_t n) {
  return counted_alloc(n);
}
void operator delete(void* p) noexcept {
  counted_free(p);
}
void operator delete[](void* p) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  counted_free(p);
}

namespace llmserve {
namespace {

using ::testing::HasSubstr;

// The most heap `fn` held at once through operator new (the tests run on one thread). A block
// freed in `fn` that was allocated before it lowers the count, so `fn` allocates what it frees.
template <typename Fn>
uint64_t peak_heap_of(Fn&& fn) {
  g_live = 0;
  g_peak = 0;
  g_counting = true;
  fn();
  g_counting = false;
  return static_cast<uint64_t>(g_peak.load());
}

std::string nested_arrays(int depth) {
  return std::string(static_cast<size_t>(depth), '[') +
         std::string(static_cast<size_t>(depth), ']');
}

// {"a":{"a":...{"a":1}...}} with `depth` objects.
std::string nested_objects(int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += R"({"a":)";
  s += "1";
  s += std::string(static_cast<size_t>(depth), '}');
  return s;
}

TEST(BoundedJson, DepthAtTheLimitPassesAndOnePastFails) {
  JsonBounds bounds;
  bounds.max_depth = 128;
  for (const auto& make : {nested_arrays, nested_objects}) {
    auto at = measure_json(make(128), bounds);
    ASSERT_TRUE(at.is_ok()) << at.status().message();
    EXPECT_EQ(at->depth, 128);
    EXPECT_TRUE(parse_bounded_json(make(128), bounds).is_ok());

    auto past = parse_bounded_json(make(129), bounds);
    ASSERT_FALSE(past.is_ok());
    EXPECT_EQ(past.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(past.status().message(),
              "request body nests arrays and objects deeper than 128 levels "
              "(server.max_json_depth)");
  }
  // Depth counts containers open at once, not containers in total.
  const std::string wide = "[" + nested_arrays(127) + "," + nested_arrays(127) + "]";
  EXPECT_TRUE(parse_bounded_json(wide, bounds).is_ok());
  // A scalar has depth 0.
  auto scalar = measure_json("\"x\"", bounds);
  ASSERT_TRUE(scalar.is_ok());
  EXPECT_EQ(scalar->depth, 0);
}

TEST(BoundedJson, FieldErrorsNameTheField) {
  JsonBounds bounds;
  bounds.max_depth = 16;
  auto deep = parse_bounded_json(nested_arrays(17), bounds, "kv_transfer_params_json");
  ASSERT_FALSE(deep.is_ok());
  EXPECT_THAT(deep.status().message(),
              HasSubstr("kv_transfer_params_json: nests arrays and objects deeper than 16"));
  auto bad = parse_bounded_json("{\"a\":", bounds, "kv_transfer_params_json");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("kv_transfer_params_json: is not valid JSON: "));
  auto body = parse_bounded_json("{\"a\" 1}", bounds);
  ASSERT_FALSE(body.is_ok());
  EXPECT_THAT(body.status().message(), HasSubstr("request body is not valid JSON: "));
  EXPECT_THAT(body.status().message(), HasSubstr("column 6"));
}

TEST(BoundedJson, IfValidKeepsTextThatIsNotJsonButRefusesTextPastABound) {
  JsonBounds bounds;
  bounds.max_depth = 16;
  auto text = parse_bounded_json_if_valid("not json {", bounds, "arguments");
  ASSERT_TRUE(text.is_ok());
  EXPECT_FALSE(text->has_value());
  auto obj = parse_bounded_json_if_valid(R"({"city":"Paris"})", bounds, "arguments");
  ASSERT_TRUE(obj.is_ok());
  ASSERT_TRUE(obj->has_value());
  EXPECT_EQ((**obj)["city"], "Paris");
  // Unclosed and deep: refused at the depth, not read to its end as "not JSON".
  auto deep = parse_bounded_json_if_valid(std::string(1000, '['), bounds, "arguments");
  ASSERT_FALSE(deep.is_ok());
  EXPECT_THAT(deep.status().message(), HasSubstr("arguments: nests arrays and objects deeper"));
}

TEST(BoundedJson, RejectedInputAllocatesNoTree) {
  const JsonBounds bounds;  // defaults: 320 levels, 64 MiB
  // 4 MiB of '[': nlohmann::json::parse builds ~2M nested arrays (~200 MB) before it fails.
  const std::string deep(4u << 20, '[');
  Status st;
  const uint64_t bytes = peak_heap_of([&] { st = parse_bounded_json(deep, bounds).status(); });
  EXPECT_FALSE(st.is_ok());
  EXPECT_THAT(st.message(), HasSubstr("deeper than 320 levels"));
  EXPECT_LT(bytes, 64u << 10) << "the pass stops at level 321";

  // Flat and wide instead of deep: 2 MiB of "[]," is ~700k arrays, ~33 MB as a tree; a budget
  // of 8 MiB stops the pass before any tree is built.
  std::string wide = "[";
  while (wide.size() < (2u << 20)) wide += "[],";
  wide += "[]]";
  JsonBounds small;
  small.max_tree_bytes = 8u << 20;
  const uint64_t wide_bytes = peak_heap_of([&] { st = parse_bounded_json(wide, small).status(); });
  EXPECT_FALSE(st.is_ok());
  EXPECT_THAT(st.message(), HasSubstr("would take more than 8MiB once parsed"));
  EXPECT_THAT(st.message(), HasSubstr("server.max_json_memory"));
  // Only nlohmann's lexer buffer, which keeps the characters read since the last string or
  // number (at most the text), not the ~33 MB tree.
  EXPECT_LT(wide_bytes, wide.size());
  // The same text within a large enough budget parses.
  EXPECT_TRUE(parse_bounded_json(wide, bounds).is_ok());
}

// The estimate stays close to the heap the real tree takes at its peak: never below 0.8x of it
// (the peak also holds the array being grown and its larger copy) and at most 2x above.
TEST(BoundedJson, TreeEstimateTracksTheRealTree) {
  const JsonBounds bounds;
  std::string long_strings = "[";
  for (int i = 0; i < 2000; ++i) long_strings += "\"" + std::string(100, 'x') + "\",";
  long_strings += "\"\"]";
  std::string ids = "[";
  for (int i = 0; i < 50000; ++i) ids += std::to_string(10000 + i) + ",";
  ids += "1]";
  std::string members = "{";
  for (int i = 0; i < 5000; ++i) members += "\"key_number_" + std::to_string(i) + "\":[1,2],";
  members += "\"z\":{}}";
  std::string empties = "[";
  for (int i = 0; i < 20000; ++i) empties += "[],{},";
  empties += "null]";
  for (const std::string& text :
       {long_strings, ids, members, empties, nested_arrays(200), nested_objects(200)}) {
    auto shape = measure_json(text, bounds);
    ASSERT_TRUE(shape.is_ok()) << shape.status().message();
    const uint64_t real = peak_heap_of([&] {
      const nlohmann::json j = nlohmann::json::parse(text);
      (void)j;
    });
    EXPECT_GE(shape->tree_bytes, real * 4 / 5) << text.substr(0, 40);
    EXPECT_LE(shape->tree_bytes, real * 2) << text.substr(0, 40);
  }
}

}  // namespace
}  // namespace llmserve
