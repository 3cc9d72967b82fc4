// Fetching an image a request names by http(s) URL: only from hosts listed in
// server.allowed_media_domains (empty: no URL is fetched), no redirects followed, at most
// max_bytes of body and timeout_seconds from connect to the last byte.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"

namespace llmserve {

struct MediaFetchOptions {
  // Hosts allowed; "*.example.com" also allows every subdomain of example.com. Empty: none.
  std::vector<std::string> allowed_domains;
  size_t max_bytes = 20u << 20;
  double timeout_seconds = 10;
};

// The host of an http(s) URL (lower-cased, without port or user info); INVALID_ARGUMENT when
// the URL is not http(s) or has no host.
Result<std::string> url_host(std::string_view url);

bool host_allowed(const std::string& host, const std::vector<std::string>& allowed_domains);

// The body of GET url. INVALID_ARGUMENT (the client named a URL that gives no image) when the
// host is not allowed (the message names the key), cannot be reached, answers other than 200,
// sends more than max_bytes or takes longer than timeout_seconds.
Result<std::string> fetch_media(const std::string& url, const MediaFetchOptions& options);

}  // namespace llmserve
