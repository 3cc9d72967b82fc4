// `llmserve tokenize` and `llmserve detokenize`: the model's tokenizer from a .gguf file or an
// HF model directory, without loading weights.
#include <charconv>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/tokenizer/load_tokenizer.h"
#include "server/cli/command.h"

namespace llmserve::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  bool no_bos = false;
  bool no_parse_special = false;
};

struct DetokenizeOptions {
  std::string model;
  std::string ids;
  bool skip_special = false;
};

std::unique_ptr<Tokenizer> open_tokenizer(const std::string& model, int& exit_code) {
  auto tok = load_tokenizer(model);
  if (!tok.is_ok()) {
    std::cerr << "error: " << tok.status().to_string() << "\n";
    exit_code = 1;
    return nullptr;
  }
  return std::move(tok).value();
}

// "1,2, 3" -> ids; false on anything that is not a comma-separated list of integers.
bool parse_ids(const std::string& s, std::vector<int32_t>& out) {
  size_t pos = 0;
  while (pos < s.size()) {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '[')) ++pos;
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    size_t stop = end;
    while (stop > pos && (s[stop - 1] == ' ' || s[stop - 1] == ']')) --stop;
    if (stop == pos) {
      if (end == s.size()) break;
      return false;
    }
    int32_t v = 0;
    auto [p, ec] = std::from_chars(s.data() + pos, s.data() + stop, v);
    if (ec != std::errc() || p != s.data() + stop) return false;
    out.push_back(v);
    pos = end + 1;
  }
  return true;
}

}  // namespace

void add_tokenize_command(CLI::App& root, int& exit_code) {
  auto opts = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = root.add_subcommand(
      "tokenize", "Print the token ids of a text as JSON {\"ids\", \"tokens\"}");
  cmd->add_option("--model", opts->model, "A .gguf file or an HF model directory")->required();
  cmd->add_option("--text", opts->text, "The text to tokenize")->required();
  cmd->add_flag("--no-bos", opts->no_bos, "Do not add BOS / EOS even when the model asks for them");
  cmd->add_flag("--no-special", opts->no_parse_special,
                "Treat special-token text such as <|im_start|> as plain text");
  cmd->callback([opts, &exit_code] {
    auto tok = open_tokenizer(opts->model, exit_code);
    if (!tok) return;
    const auto ids = tok->encode(opts->text, !opts->no_bos, !opts->no_parse_special);
    nlohmann::json out;
    out["ids"] = ids;
    out["tokens"] = nlohmann::json::array();
    for (int32_t id : ids) out["tokens"].push_back(tok->token_text(id));
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    exit_code = 0;
  });
}

void add_detokenize_command(CLI::App& root, int& exit_code) {
  auto opts = std::make_shared<DetokenizeOptions>();
  CLI::App* cmd = root.add_subcommand("detokenize", "Print the text of comma-separated token ids");
  cmd->add_option("--model", opts->model, "A .gguf file or an HF model directory")->required();
  cmd->add_option("--ids", opts->ids, "Token ids, e.g. 1,2,3")->required();
  cmd->add_flag("--skip-special", opts->skip_special, "Leave out special tokens such as BOS / EOS");
  cmd->callback([opts, &exit_code] {
    std::vector<int32_t> ids;
    if (!parse_ids(opts->ids, ids)) {
      std::cerr << "error: --ids must be comma-separated integers, got '" << opts->ids << "'\n";
      exit_code = 2;
      return;
    }
    auto tok = open_tokenizer(opts->model, exit_code);
    if (!tok) return;
    for (int32_t id : ids) {
      if (id < 0 || id >= tok->vocab_size()) {
        std::cerr << "error: token id " << id << " is outside the vocab [0, " << tok->vocab_size()
                  << ")\n";
        exit_code = 2;
        return;
      }
    }
    std::cout << tok->decode(ids, opts->skip_special) << "\n";
    exit_code = 0;
  });
}

}  // namespace llmserve::cli
