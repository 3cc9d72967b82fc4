// The images of a request, for every transport: each image part (an OpenAI image_url, a
// Responses input_image, an Anthropic base64 image block) read, decoded, hashed and encoded,
// placed on the prompt's runs of image tokens in order. Runs on the request's thread, before
// the request is submitted (never on the engine's step loop); the encoder's cache makes a
// repeated image cost a hash.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/engine.h"
#include "engine/generate_request.h"
#include "engine/vision/image_decoder.h"
#include "engine/vision/image_encoder.h"
#include "engine/vision/image_placement.h"
#include "server/common/generation_request.h"
#include "server/common/media_options.h"

namespace llmserve {

// INVALID_ARGUMENT "<field>: ..." when `count` images pass `max` (server.max_images_per_request).
Status check_image_count(size_t count, int32_t max, std::string_view field);

// The placeholder text of the engine's vision model (its begin / soft / end tokens' text and
// soft tokens per image), read from the tokenizer; nullopt without a vision tower.
std::optional<vision::ImageTokenText> image_token_text(const vision::ImageEncoder* encoder,
                                                       const Tokenizer& tokenizer);

// Checks that the prompt's runs of image tokens are the images' (one run of the model's size
// per input): INVALID_ARGUMENT "<field>: ..." otherwise (a text that spells image tokens).
Status check_image_runs(std::span<const int32_t> prompt_ids, size_t num_images,
                        const vision::VisionConfig& config, std::string_view field);

// Each input read and encoded, in order, placed on the prompt's k-th run of image tokens.
// Errors: INVALID_ARGUMENT "<input.where>: <the problem>" (not a data: URL or allowed URL, bad
// base64, a fetch that failed, a corrupt or unsupported image, a size limit).
Result<std::vector<PromptImage>> load_request_images(std::span<const ImageInput> inputs,
                                                     std::span<const int32_t> prompt_ids,
                                                     vision::ImageEncoder& encoder,
                                                     const MediaOptions& options);

// The request's images (req.images, a chat's: one prompt) loaded onto engine_requests[0] with
// the engine's encoder; nothing to do without images. Errors as load_request_images.
Status attach_request_images(const GenerationRequest& req, Engine& engine,
                             const MediaOptions& options,
                             std::vector<GenerateRequest>& engine_requests);

}  // namespace llmserve
