#include "server/common/media_fetch.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>

namespace llmserve {

Result<std::string> url_host(std::string_view url) {
  size_t rest = 0;
  if (url.substr(0, 7) == "http://") {
    rest = 7;
  } else if (url.substr(0, 8) == "https://") {
    rest = 8;
  } else {
    return invalid_argument("the image URL must be a data: URL or an http(s) URL");
  }
  std::string_view authority = url.substr(rest, url.find_first_of("/?#", rest) - rest);
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  std::string host;
  if (!authority.empty() && authority[0] == '[') {  // IPv6 literal
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return invalid_argument("the image URL has a bad host");
    host = std::string(authority.substr(0, close + 1));
  } else {
    host = std::string(authority.substr(0, authority.find(':')));
  }
  if (host.empty()) return invalid_argument("the image URL has no host");
  std::transform(host.begin(), host.end(), host.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return host;
}

bool host_allowed(const std::string& host, const std::vector<std::string>& allowed_domains) {
  for (std::string d : allowed_domains) {
    std::transform(d.begin(), d.end(), d.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (d == host) return true;
    if (d.size() > 2 && d.rfind("*.", 0) == 0) {
      const std::string_view base = std::string_view(d).substr(2);
      if (host == base || (host.size() > base.size() + 1 &&
                           host.compare(host.size() - base.size(), base.size(), base) == 0 &&
                           host[host.size() - base.size() - 1] == '.')) {
        return true;
      }
    }
  }
  return false;
}

Result<std::string> fetch_media(const std::string& url, const MediaFetchOptions& options) {
  LLMSERVE_ASSIGN_OR_RETURN(std::string host, url_host(url));
  if (!host_allowed(host, options.allowed_domains)) {
    return invalid_argument("the image URL's host '" + host +
                            "' is not in server.allowed_media_domains (send the image as a "
                            "base64 data: URL, or ask the operator to allow the host)");
  }
  const size_t scheme_end = url.find("://") + 3;
  const size_t path_at = url.find_first_of("/?#", scheme_end);
  const std::string origin = url.substr(0, path_at);
  std::string path = path_at == std::string::npos ? "/" : url.substr(path_at);
  if (const size_t hash = path.find('#'); hash != std::string::npos) path.resize(hash);
  if (path.empty() || path[0] != '/') path = "/" + path;

  httplib::Client client(origin);
  const double limit = std::max(options.timeout_seconds, 0.001);
  const auto sec = static_cast<time_t>(limit);
  const auto usec = static_cast<time_t>((limit - std::floor(limit)) * 1e6);
  client.set_connection_timeout(sec, usec);
  client.set_read_timeout(sec, usec);
  client.set_write_timeout(sec, usec);
  client.set_follow_location(false);
  client.enable_server_certificate_verification(true);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit);
  std::string body;
  bool too_large = false, too_slow = false;
  int status = 0;
  auto result = client.Get(
      path,
      [&](const httplib::Response& r) {
        status = r.status;
        return r.status == 200;
      },
      [&](const char* data, size_t n) {
        if (body.size() + n > options.max_bytes) {
          too_large = true;
          return false;
        }
        if (std::chrono::steady_clock::now() > deadline) {
          too_slow = true;
          return false;
        }
        body.append(data, n);
        return true;
      });
  if (too_large) {
    return invalid_argument("the image at the URL is larger than " +
                            std::to_string(options.max_bytes) + " bytes");
  }
  if (too_slow) {
    return invalid_argument("the image URL did not answer within " +
                            std::to_string(options.timeout_seconds) + " s");
  }
  if (status != 0 && status != 200) {
    return invalid_argument("fetching the image URL gave HTTP status " + std::to_string(status));
  }
  if (!result) {
    return invalid_argument("fetching the image URL failed: " + httplib::to_string(result.error()));
  }
  return body;
}

}  // namespace llmserve
