#include "server/grpc/tokenizer_bundle.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <openssl/evp.h>

#include "engine/model/model_config.h"
#include "engine/runner/stop_checker.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/common/hf_tokenizer_export.h"
#include "server/common/zip_archive.h"

namespace llmserve {

namespace {

// What a Hugging Face tokenizer loader (and the gateway's) reads from a model directory.
constexpr const char* kDirFiles[] = {
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "generation_config.json",
    "config.json",
    "chat_template.json",
    "chat_template.jinja",
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
};

constexpr uintmax_t kMaxFileBytes = uintmax_t{200} << 20;

Result<std::vector<ZipEntry>> dir_files(const std::filesystem::path& dir) {
  std::vector<ZipEntry> out;
  for (const char* name : kDirFiles) {
    const auto path = dir / name;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) continue;
    if (std::filesystem::file_size(path, ec) > kMaxFileBytes) {
      return failed_precondition("'" + path.string() + "' is too large to send");
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) return unavailable("cannot read '" + path.string() + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    out.push_back({name, ss.str()});
  }
  if (out.empty() || out.front().name != "tokenizer.json") {
    return failed_precondition("the model directory '" + dir.string() + "' has no tokenizer.json");
  }
  return out;
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

Result<TokenizerBundle> make_tokenizer_bundle(const Engine& engine) {
  const std::filesystem::path model(engine.options().model_path);
  std::vector<ZipEntry> entries;
  std::error_code ec;
  if (std::filesystem::is_directory(model, ec)) {
    LLMSERVE_ASSIGN_OR_RETURN(entries, dir_files(model));
  } else {
    HfExportOptions o;
    o.model_max_length = engine.max_model_len();
    o.chat_template = engine.options().chat_template_override;
    o.eos_token_ids = generation_eos_ids(engine.tokenizer(), engine.model_config());
    LLMSERVE_ASSIGN_OR_RETURN(std::vector<ExportedFile> files,
                              export_hf_tokenizer(engine.tokenizer().spec(), o));
    for (auto& f : files) entries.push_back({std::move(f.name), std::move(f.bytes)});
  }
  TokenizerBundle b;
  b.files = static_cast<int32_t>(entries.size());
  b.zip = make_stored_zip(entries);
  b.sha256_hex = sha256_hex(b.zip);
  return b;
}

}  // namespace llmserve
