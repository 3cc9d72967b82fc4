// The image inputs' readers (server/common/data_url.h, media_fetch.h): base64 against RFC 4648's
// test vectors (section 10) and Python's base64 module on bytes with every value, data: URLs,
// and the host allow-list of server.allowed_media_domains.
#include <gtest/gtest.h>

#include <string>

#include "server/common/data_url.h"
#include "server/common/media_fetch.h"

namespace llmserve {
namespace {

TEST(Base64, Rfc4648Vectors) {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"Zg==", "f"},
                                                         {"Zm8=", "fo"},
                                                         {"Zm9v", "foo"},
                                                         {"Zm9vYg==", "foob"},
                                                         {"Zm9vYmE=", "fooba"},
                                                         {"Zm9vYmFy", "foobar"}};
  for (const auto& [text, want] : vectors) {
    auto got = decode_base64(text, 100);
    ASSERT_TRUE(got.is_ok()) << text << ": " << got.status().to_string();
    EXPECT_EQ(*got, want) << text;
    // Unpadded forms decode the same.
    std::string bare = text;
    while (!bare.empty() && bare.back() == '=') bare.pop_back();
    EXPECT_EQ(decode_base64(bare, 100).value(), want) << bare;
  }
}

TEST(Base64, EveryByteValue) {
  // python3 -c "import base64; print(base64.b64encode(bytes(range(256))).decode())"
  const char* text =
      "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNE"
      "RUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn+AgYKDhIWGh4iJ"
      "iouMjY6PkJGSk5SVlpeYmZqbnJ2en6ChoqOkpaanqKmqq6ytrq+wsbKztLW2t7i5uru8vb6/wMHCw8TFxsfIycrLzM3O"
      "z9DR0tPU1dbX2Nna29zd3t/g4eLj5OXm5+jp6uvs7e7v8PHy8/T19vf4+fr7/P3+/w==";
  auto got = decode_base64(text, 1000);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_EQ(got->size(), 256u);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(static_cast<unsigned char>((*got)[i]), i);
}

TEST(Base64, RefusesBadTextAndOversizedData) {
  auto bad = decode_base64("Zm9v!mFy", 100);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("character 4"), std::string::npos);
  EXPECT_FALSE(decode_base64("Zm9vY", 100).is_ok());  // 5 characters: not whole bytes
  EXPECT_FALSE(decode_base64("Zg=", 100).is_ok());    // bad padding
  auto big = decode_base64("Zm9vYmFy", 5);
  ASSERT_FALSE(big.is_ok());
  EXPECT_NE(big.status().message().find("at most 5"), std::string::npos);
}

TEST(DataUrl, ReadsMediaTypeAndBytes) {
  auto d = parse_data_url("data:image/png;base64,Zm9vYmFy", 100);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ(d->media_type, "image/png");
  EXPECT_EQ(d->bytes, "foobar");
  EXPECT_EQ(parse_data_url("data:;base64,Zg==", 100).value().media_type, "");
  EXPECT_FALSE(parse_data_url("data:image/png,raw", 100).is_ok());     // not base64
  EXPECT_FALSE(parse_data_url("data:image/png;base64", 100).is_ok());  // no comma
  EXPECT_FALSE(parse_data_url("http://x/y.png", 100).is_ok());
}

TEST(MediaFetch, HostsAndTheAllowList) {
  EXPECT_EQ(url_host("https://Images.Example.com:8443/a/b.png?x=1").value(), "images.example.com");
  EXPECT_EQ(url_host("http://user:pw@10.0.0.1/x").value(), "10.0.0.1");
  EXPECT_EQ(url_host("http://[::1]:80/x").value(), "[::1]");
  EXPECT_FALSE(url_host("ftp://example.com/x").is_ok());
  EXPECT_FALSE(url_host("file:///etc/passwd").is_ok());
  EXPECT_FALSE(url_host("http:///x").is_ok());
  const std::vector<std::string> allowed = {"example.com", "*.cdn.net"};
  EXPECT_TRUE(host_allowed("example.com", allowed));
  EXPECT_FALSE(host_allowed("www.example.com", allowed));
  EXPECT_FALSE(host_allowed("badexample.com", allowed));
  EXPECT_TRUE(host_allowed("a.cdn.net", allowed));
  EXPECT_TRUE(host_allowed("cdn.net", allowed));
  EXPECT_FALSE(host_allowed("evilcdn.net", allowed));
  EXPECT_FALSE(host_allowed("example.com", {}));
  // Not allowed: refused before any connection, naming the key.
  MediaFetchOptions o;
  auto r = fetch_media("https://example.com/cat.png", o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("server.allowed_media_domains"), std::string::npos);
}

}  // namespace
}  // namespace llmserve
