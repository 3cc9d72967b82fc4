#include "engine/tokenizer/load_tokenizer.h"

#include <filesystem>

#include "engine/model/gguf_file.h"

namespace llmserve {

Result<TokenizerSpec> load_tokenizer_spec(const std::string& model_path) {
  std::error_code ec;
  if (std::filesystem::is_directory(model_path, ec)) return tokenizer_spec_from_hf_dir(model_path);
  if (!std::filesystem::exists(model_path, ec))
    return not_found("model path not found: " + model_path);
  LLMSERVE_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> gguf, GgufFile::open(model_path));
  return tokenizer_spec_from_gguf(*gguf);
}

Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& model_path) {
  LLMSERVE_ASSIGN_OR_RETURN(TokenizerSpec spec, load_tokenizer_spec(model_path));
  return Tokenizer::create(std::move(spec));
}

}  // namespace llmserve
