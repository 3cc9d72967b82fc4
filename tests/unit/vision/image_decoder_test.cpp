// decode_image on the fixture images (sizes as Pillow reads them) and on bad input: truncated
// and corrupt data, unknown formats, and each limit, named in the error.
#include "engine/vision/image_decoder.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <span>
#include <string>
#include <vector>

#include "tests/unit/vision/vision_fixture.h"

namespace llmserve::vision {
namespace {

using testing::image_bytes;

struct Case {
  const char* name;
  int width, height;
};

TEST(ImageDecoder, DecodesEveryFixtureFormatAtItsSize) {
  const Case cases[] = {{"rgb.jpg", 64, 48},    {"rgba.png", 37, 90},
                        {"gray.png", 20, 20},   {"palette.png", 100, 70},
                        {"rgb.webp", 120, 120}, {"exact.png", 56, 56},
                        {"rgba.webp", 47, 33},  {"palette_trns.png", 30, 40}};
  for (const Case& c : cases) {
    const std::vector<uint8_t> bytes = image_bytes(c.name);
    ASSERT_FALSE(bytes.empty()) << c.name;
    auto img = decode_image(bytes, ImageLimits{});
    ASSERT_TRUE(img.is_ok()) << c.name << ": " << img.status().to_string();
    EXPECT_EQ(img->width, c.width) << c.name;
    EXPECT_EQ(img->height, c.height) << c.name;
    EXPECT_EQ(img->pixels.size(), static_cast<size_t>(c.width) * c.height * 3) << c.name;
  }
}

TEST(ImageDecoder, GreyIsReplicatedIntoRgb) {
  auto img = decode_image(image_bytes("gray.png"), ImageLimits{});
  ASSERT_TRUE(img.is_ok());
  for (size_t i = 0; i < img->pixels.size(); i += 3) {
    ASSERT_EQ(img->pixels[i], img->pixels[i + 1]);
    ASSERT_EQ(img->pixels[i], img->pixels[i + 2]);
  }
}

void expect_error(std::span<const uint8_t> bytes, const ImageLimits& limits,
                  const std::string& needle, const std::string& what) {
  auto img = decode_image(bytes, limits);
  ASSERT_FALSE(img.is_ok()) << what;
  EXPECT_EQ(img.status().code(), StatusCode::kInvalidArgument) << what;
  EXPECT_NE(img.status().message().find(needle), std::string::npos)
      << what << ": " << img.status().message();
}

TEST(ImageDecoder, TruncatedFilesAreErrorsNotPartialImages) {
  for (const char* name : {"rgb.jpg", "rgba.png", "rgb.webp", "palette.png"}) {
    std::vector<uint8_t> bytes = image_bytes(name);
    for (size_t keep : {bytes.size() / 2, bytes.size() - 8, size_t{40}}) {
      expect_error(std::span(bytes.data(), keep), ImageLimits{}, "corrupt",
                   std::string(name) + " cut to " + std::to_string(keep));
    }
  }
}

TEST(ImageDecoder, CorruptBodiesAreErrors) {
  std::vector<uint8_t> png = image_bytes("rgba.png");
  for (size_t i = 60; i < png.size() - 20; i += 7) png[i] ^= 0x5A;  // breaks CRCs and zlib data
  expect_error(png, ImageLimits{}, "corrupt PNG", "flipped PNG");
  std::vector<uint8_t> webp = image_bytes("rgb.webp");
  for (size_t i = 40; i < webp.size(); ++i) webp[i] = 0xFF;
  expect_error(webp, ImageLimits{}, "corrupt WebP", "overwritten WebP");
  std::vector<uint8_t> jpg = image_bytes("rgb.jpg");
  jpg.resize(200);  // header only, then garbage where the scan should be
  jpg.insert(jpg.end(), 100, 0x00);
  expect_error(jpg, ImageLimits{}, "corrupt JPEG", "garbage JPEG");
}

TEST(ImageDecoder, UnknownAndEmptyInputs) {
  const std::string gif = "GIF89a\x01\x00\x01\x00";
  expect_error(std::span(reinterpret_cast<const uint8_t*>(gif.data()), gif.size()), ImageLimits{},
               "format not recognised", "gif");
  expect_error({}, ImageLimits{}, "empty", "empty");
}

TEST(ImageDecoder, LimitsAreCheckedAndNamed) {
  const std::vector<uint8_t> jpg = image_bytes("rgb.jpg");
  ImageLimits small_bytes;
  small_bytes.max_bytes = 100;
  expect_error(jpg, small_bytes, "100-byte limit", "bytes");
  for (const char* name : {"rgb.jpg", "rgba.png", "rgb.webp"}) {
    ImageLimits few_pixels;
    few_pixels.max_pixels = 1000;
    expect_error(image_bytes(name), few_pixels, "1000-pixel limit", name);
    ImageLimits short_side;
    short_side.max_side = 30;
    expect_error(image_bytes(name), short_side, "30-pixel side limit", name);
  }
}

// A PNG whose header claims 60000 x 60000 pixels (valid CRC) is refused before any pixel
// memory is allocated.
TEST(ImageDecoder, DimensionBombIsRefusedFromTheHeader) {
  std::vector<uint8_t> png = image_bytes("exact.png");
  auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) png[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
  };
  put32(16, 60000);  // IHDR width and height follow the signature, length and type
  put32(20, 60000);
  put32(29, static_cast<uint32_t>(crc32(0, png.data() + 12, 17)));
  ImageLimits limits;
  limits.max_side = 100000;
  expect_error(png, limits, "pixel limit", "PNG bomb");
}

}  // namespace
}  // namespace llmserve::vision
