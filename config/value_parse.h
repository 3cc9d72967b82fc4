// Text -> typed value parsers shared by the YAML, environment and command-line layers.
// Each returns the value or an error message (without key or source; the caller adds those).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"

namespace llmserve {

// true/false, yes/no, on/off, 1/0 (case-insensitive).
Result<bool> parse_bool(std::string_view text);

// A whole decimal integer with optional sign; no trailing characters.
Result<int64_t> parse_int(std::string_view text);

// A finite decimal floating-point number.
Result<double> parse_double(std::string_view text);

// A byte count: plain bytes ("1048576") or a number with a unit, optional space between:
// B, kB/KB (1000), KiB (1024), MB, MiB, GB, GiB, TB, TiB (units case-insensitive, so "mib"
// is MiB). Fractions are allowed with a unit ("1.5GiB") and rounded down to whole bytes.
Result<uint64_t> parse_size(std::string_view text);

// Formats a byte count with the largest binary unit that divides it exactly ("512MiB", "1000").
std::string format_size(uint64_t bytes);

// Splits "a, b,c" into {"a","b","c"}: items trimmed, empty items dropped.
std::vector<std::string> split_list(std::string_view text);

std::string_view trim(std::string_view text);

}  // namespace llmserve
