// Reading JSON text that was cut short (max_tokens or a stop string ended the reply inside it):
// what it holds up to the cut, with nothing invented past it. Used for tool-call replies, whose
// grammar makes the text a prefix of one JSON object.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmserve {

// Where the value of `key` starts when `text` opens as `{ "key" :` (whitespace allowed around
// each piece) and the value has begun; nullopt otherwise.
std::optional<size_t> first_member_value(std::string_view text, std::string_view key);

// The elements of the array that opens at text[open] ('[') which are complete before the cut:
// each one ends before a ',' or ']' of the array, or with its own closing '}' / ']' / '"'.
// A scalar at the cut (a number that may have more digits) is not complete.
std::vector<nlohmann::ordered_json> complete_array_items(std::string_view text, size_t open);

// The characters of the string that opens at text[open] ('"') up to its closing quote or the
// cut (an escape sequence cut in half is dropped); nullopt when text[open] is not '"' or the
// text is not a valid JSON string prefix.
std::optional<std::string> string_prefix(std::string_view text, size_t open);

}  // namespace llmserve
