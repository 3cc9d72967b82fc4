// Loads the oracle fixtures made by tests/reference/make_tokenizer_fixtures.py.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace llmserve::testing {

inline std::string fixture_path(const std::string& rel) {
  return std::string(LLMSERVE_FIXTURES_DIR) + "/tokenizer/" + rel;
}

inline nlohmann::json load_json(const std::string& rel) {
  std::ifstream in(fixture_path(rel));
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

struct CorpusCase {
  std::string input;     // the bytes given to encode (may be invalid UTF-8)
  std::string repaired;  // the oracle's text (invalid sequences -> U+FFFD)
  bool invalid = false;
};

inline std::vector<CorpusCase> load_corpus() {
  std::vector<CorpusCase> out;
  for (const auto& c : load_json("corpus.json")) {
    CorpusCase cc;
    cc.repaired = c.at("text").get<std::string>();
    if (c.contains("hex")) {
      const std::string hex = c["hex"].get<std::string>();
      for (size_t i = 0; i + 1 < hex.size(); i += 2) {
        cc.input.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
      }
      cc.invalid = true;
    } else {
      cc.input = cc.repaired;
    }
    out.push_back(std::move(cc));
  }
  return out;
}

struct OracleRow {
  std::vector<int32_t> ids;
  std::vector<int32_t> ids_no_parse_special;
  std::optional<std::string> decoded;
};

inline std::vector<OracleRow> load_rows(const std::string& rel) {
  std::vector<OracleRow> rows;
  for (const auto& r : load_json(rel)) {
    OracleRow row;
    row.ids = r.at("ids").get<std::vector<int32_t>>();
    row.ids_no_parse_special = r.contains("ids_no_parse_special")
                                   ? r["ids_no_parse_special"].get<std::vector<int32_t>>()
                                   : row.ids;
    if (r.contains("decoded")) row.decoded = r["decoded"].get<std::string>();
    rows.push_back(std::move(row));
  }
  return rows;
}

inline const char* test_model() {
  return std::getenv("LLMSERVE_TEST_MODEL");
}

}  // namespace llmserve::testing
