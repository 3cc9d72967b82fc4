// What a request's images may be (server.allowed_media_domains, max_media_bytes,
// media_fetch_timeout_seconds): the URL fetch and the decoder's size limits.
#pragma once

#include "engine/vision/image_decoder.h"
#include "server/common/media_fetch.h"

namespace llmserve {

struct MediaOptions {
  MediaFetchOptions fetch;     // http(s) URLs; fetch.max_bytes also bounds data: URLs
  vision::ImageLimits limits;  // decoded size limits
};

}  // namespace llmserve
