#include "engine/pooling/rank_head.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/model/gguf_file.h"
#include "llmserve/kernels/dequantize.h"

namespace llmserve {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Row `row` of a [rows, hidden] matrix, dequantized.
Result<std::vector<float>> matrix_row(const TensorView& t, int64_t row, int64_t hidden,
                                      const std::string& what) {
  if (t.cols() != hidden || row < 0 || row >= t.rows() || !kernels::dtype_can_dequantize(t.type) ||
      hidden % kernels::dtype_info(t.type).block_elems != 0 ||
      t.nbytes < kernels::row_bytes(t.type, hidden) * static_cast<size_t>(row + 1)) {
    return invalid_argument("rerank: " + what + " has no readable row " + std::to_string(row) +
                            " of width " + std::to_string(hidden) + " in " + t.name);
  }
  std::vector<float> out(static_cast<size_t>(hidden));
  kernels::dequantize_row(t.type, t.data + kernels::row_bytes(t.type, hidden) * row, out.data(),
                          hidden);
  return out;
}

int32_t token_id(const Tokenizer& tok, const std::string& text) {
  const std::vector<std::string>& tokens = tok.spec().tokens;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] == text) return static_cast<int32_t>(i);
  }
  return -1;
}

Result<std::optional<RankHead>> from_folder(const LoadedModel& model, const Tokenizer& tok) {
  const fs::path dir(model.path());
  const std::string cfg_text = read_text(dir / "config.json");
  const json cfg = json::parse(cfg_text, nullptr, /*allow_exceptions=*/false);
  if (!cfg.is_object() || !cfg.contains("architectures") || !cfg["architectures"].is_array() ||
      cfg["architectures"].empty() || cfg["architectures"][0] != "Qwen3ForCausalLM") {
    return std::optional<RankHead>();
  }
  const std::string hint = qwen3_reranker_hint(dir.string(), cfg_text);
  if (hint.empty()) return std::optional<RankHead>();
  const int64_t hidden = model.config().hidden_size;
  const TensorView* head = model.tensor("output.weight");
  if (head == nullptr) head = model.tensor("token_embd.weight");  // tied
  if (head == nullptr) return invalid_argument("rerank: the model has no LM head");
  RankHead h;
  for (const char* word : {"yes", "no"}) {
    const int32_t id = token_id(tok, word);
    if (id < 0) {
      return invalid_argument(std::string("rerank: the model is a Qwen3-Reranker (") + hint +
                              ") but its tokenizer has no \"" + word + "\" token");
    }
    LLMSERVE_ASSIGN_OR_RETURN(std::vector<float> row,
                              matrix_row(*head, id, hidden, std::string("the \"") + word + "\""));
    (std::string_view(word) == "yes" ? h.yes : h.no) = std::move(row);
  }
  h.source = "Qwen3-Reranker (" + hint + "): the LM head's \"yes\" / \"no\" rows";
  return std::optional<RankHead>(std::move(h));
}

Result<std::optional<RankHead>> from_gguf(const LoadedModel& model, const GgufFile& g) {
  const std::string& arch = model.config().architecture;
  const auto type = g.get_u32(arch + ".pooling_type");
  if (!type || *type != 4) return std::optional<RankHead>();
  const std::string where = model.path() + " (" + arch + ".pooling_type 4, rank)";
  const TensorView* cls = model.tensor("cls.output.weight");
  const auto labels = g.get_string_array(arch + ".classifier.output_labels");
  if (cls == nullptr || !labels || labels->size() != 2 || cls->rows() != 2) {
    return unimplemented(
        "rerank: " + where +
        ": only the yes/no head of Qwen3-Reranker is supported (cls.output.weight with two rows "
        "and classifier.output_labels \"yes\", \"no\"); this classifier is not");
  }
  const int64_t hidden = model.config().hidden_size;
  RankHead h;
  for (int64_t i = 0; i < 2; ++i) {
    const std::string label((*labels)[static_cast<size_t>(i)]);
    if (label != "yes" && label != "no") {
      return unimplemented("rerank: " + where + ": classifier label '" + label +
                           "' is not \"yes\" or \"no\"");
    }
    LLMSERVE_ASSIGN_OR_RETURN(std::vector<float> row,
                              matrix_row(*cls, i, hidden, "the \"" + label + "\" label"));
    (label == "yes" ? h.yes : h.no) = std::move(row);
  }
  if (h.yes.empty() || h.no.empty()) {
    return unimplemented("rerank: " + where + ": the labels must be \"yes\" and \"no\"");
  }
  h.source = where + ": cls.output.weight";
  return std::optional<RankHead>(std::move(h));
}

}  // namespace

std::string qwen3_reranker_hint(const std::string& dir, const std::string& config_json) {
  std::istringstream readme(read_text(fs::path(dir) / "README.md"));
  for (std::string line; std::getline(readme, line);) {
    const std::string l = lower(line);
    if (l.starts_with("# qwen3-reranker")) return "README.md heading '" + line + "'";
  }
  const std::string name = fs::path(dir).lexically_normal().filename().string().empty()
                               ? fs::path(dir).parent_path().filename().string()
                               : fs::path(dir).filename().string();
  if (lower(name).find("qwen3-reranker") != std::string::npos) return "folder name '" + name + "'";
  const json cfg = json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (cfg.is_object() && cfg.contains("_name_or_path") && cfg["_name_or_path"].is_string()) {
    const std::string n = cfg["_name_or_path"].get<std::string>();
    if (lower(n).find("qwen3-reranker") != std::string::npos) return "_name_or_path '" + n + "'";
  }
  return "";
}

Result<std::optional<RankHead>> load_rank_head(const LoadedModel& model, const Tokenizer& tok) {
  if (const GgufFile* g = model.gguf()) return from_gguf(model, *g);
  if (model.source() == LoadedModel::Source::kSafetensors) return from_folder(model, tok);
  return std::optional<RankHead>();
}

}  // namespace llmserve
