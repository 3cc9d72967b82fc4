#include "config/key_suggest.h"

#include <algorithm>
#include <vector>

#include "config/config_keys.h"

namespace llmserve {
namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string closest(std::string_view name, const std::vector<std::string_view>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(2, name.size() / 3) + 1;
  for (std::string_view c : candidates) {
    const size_t d = edit_distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = std::string(c);
    }
  }
  return best;
}

}  // namespace

std::string unknown_key_hint(std::string_view section, std::string_view name) {
  std::vector<std::string_view> keys;
  for (const ConfigKey& k : config_keys()) {
    if (k.section == section) keys.push_back(k.name);
  }
  std::string out;
  const std::string guess = closest(name, keys);
  if (!guess.empty()) out += "; did you mean " + std::string(section) + "." + guess + "?";
  out += " (" + std::string(section) + " keys:";
  for (std::string_view k : keys) out += " " + std::string(k);
  return out + ")";
}

std::string unknown_section_hint(std::string_view name) {
  std::string out;
  const std::string guess = closest(name, config_sections());
  if (!guess.empty()) out += "; did you mean " + guess + "?";
  out += " (sections:";
  for (std::string_view s : config_sections()) out += " " + std::string(s);
  return out + ")";
}

}  // namespace llmserve
