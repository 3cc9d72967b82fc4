#include "server/common/request_images.h"

#include <algorithm>

#include "server/common/data_url.h"
#include "server/common/field_checks.h"

namespace llmserve {

Status check_image_count(size_t count, int32_t max, std::string_view field) {
  if (count <= static_cast<size_t>(std::max(max, 0))) return Status::ok();
  return field_error(field, "the request has " + std::to_string(count) + " images; at most " +
                                std::to_string(max) +
                                " are accepted (server.max_images_per_request)");
}

std::optional<vision::ImageTokenText> image_token_text(const vision::ImageEncoder* encoder,
                                                       const Tokenizer& tokenizer) {
  if (encoder == nullptr) return std::nullopt;
  const vision::VisionConfig& c = encoder->config();
  vision::ImageTokenText t;
  t.boi = tokenizer.token_text(c.boi_token_id);
  t.soft = tokenizer.token_text(c.image_token_id);
  t.eoi = tokenizer.token_text(c.eoi_token_id);
  t.count = c.mm_tokens_per_image;
  return t;
}

Status check_image_runs(std::span<const int32_t> prompt_ids, size_t num_images,
                        const vision::VisionConfig& config, std::string_view field) {
  const std::vector<ImageSpan> spans = find_image_spans(prompt_ids, config.image_token_id);
  bool ok = spans.size() == num_images;
  for (const ImageSpan& s : spans) ok = ok && s.length == config.mm_tokens_per_image;
  if (ok) return Status::ok();
  return field_error(field, "the prompt's image tokens do not match its " +
                                std::to_string(num_images) +
                                " image(s): the text must not spell the image tokens");
}

namespace {

Result<std::string> image_bytes(const ImageInput& in, const MediaOptions& options) {
  if (in.url.rfind("data:", 0) == 0) {
    LLMSERVE_ASSIGN_OR_RETURN(DataUrl d, parse_data_url(in.url, options.fetch.max_bytes));
    if (!d.media_type.empty() && d.media_type.rfind("image/", 0) != 0) {
      return invalid_argument("the data URL's media type '" + d.media_type +
                              "' is not an image type");
    }
    return std::move(d.bytes);
  }
  return fetch_media(in.url, options.fetch);
}

}  // namespace

Result<std::vector<PromptImage>> load_request_images(std::span<const ImageInput> inputs,
                                                     std::span<const int32_t> prompt_ids,
                                                     vision::ImageEncoder& encoder,
                                                     const MediaOptions& options) {
  const std::vector<ImageSpan> spans =
      find_image_spans(prompt_ids, encoder.config().image_token_id);
  if (spans.size() != inputs.size()) {
    return invalid_argument("the prompt has " + std::to_string(spans.size()) +
                            " runs of image tokens for " + std::to_string(inputs.size()) +
                            " images");
  }
  std::vector<PromptImage> out;
  out.reserve(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    const ImageInput& in = inputs[k];
    auto fail = [&in](const Status& st) { return field_error(in.where, st.message()); };
    auto bytes = image_bytes(in, options);
    if (!bytes.is_ok()) return fail(bytes.status());
    const auto* data = reinterpret_cast<const uint8_t*>(bytes->data());
    auto image =
        vision::decode_image(std::span<const uint8_t>(data, bytes->size()), options.limits);
    if (!image.is_ok()) return fail(image.status());
    PromptImage p;
    p.span = spans[k];
    p.content_hash = vision::image_content_hash(*image);
    auto features = encoder.features(*image, p.content_hash);
    if (!features.is_ok()) return fail(features.status());
    p.features = std::move(*features);
    out.push_back(std::move(p));
  }
  return out;
}

Status attach_request_images(const GenerationRequest& req, Engine& engine,
                             const MediaOptions& options,
                             std::vector<GenerateRequest>& engine_requests) {
  if (req.images.empty()) return Status::ok();
  if (engine.image_encoder() == nullptr) {
    return field_error(req.images[0].where,
                       "images are not accepted: this model has no vision tower");
  }
  if (engine_requests.size() != 1) {
    return invalid_argument("images go with a single prompt");
  }
  LLMSERVE_ASSIGN_OR_RETURN(engine_requests[0].images,
                            load_request_images(req.images, engine_requests[0].prompt_token_ids,
                                                *engine.image_encoder(), options));
  return Status::ok();
}

}  // namespace llmserve
