// Python semantics of the Jinja operators: arithmetic, concatenation, comparison, membership,
// indexing and slicing (strings by code point, negative indices, [::-1]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/chat/jinja_value.h"
#include "engine/core/status.h"

namespace llmserve::jinja {

// op: + - * / // % ** ~ == != < > <= >= in notin. Sizes of results are the caller's to check.
Result<Value> binary_op(std::string_view op, const Value& l, const Value& r);
// RESOURCE_EXHAUSTED when `l * r` repeats a string past max_bytes or a list past max_items;
// checked before binary_op builds it (binary_op alone allows 1 GiB / 16 M items).
Status check_repeat(const Value& l, const Value& r, size_t max_bytes, int64_t max_items);
// op: not - +
Result<Value> unary_op(std::string_view op, const Value& v);
Result<bool> contains(const Value& container, const Value& item);
// obj[index] for lists, tuples and strings; out of range gives undefined, as jinja2 does.
Value index_value(const Value& obj, int64_t index);
// obj[start:stop:step]; none for a missing part.
Result<Value> slice_value(const Value& obj, const Value& start, const Value& stop,
                          const Value& step);

}  // namespace llmserve::jinja
