// PNG through libpng's classic API: palette and grey expanded to RGB, 16-bit samples cut to their
// high byte, interlacing undone; with an alpha channel or a tRNS entry, RGBA composited over white
// (composite_over_white) as transformers' convert_to_rgb does. libpng reports errors through
// png_error, which longjmps back to run() (only C frames lie between; the state the jump must keep
// lives in the caller's Job).
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/vision/image_codecs.h"

namespace llmserve::vision {
namespace {

constexpr png_alloc_size_t kMaxChunkBytes = 8 << 20;  // ancillary chunks (text, ICC) inflated

struct Job {
  std::span<const uint8_t> bytes;
  size_t offset = 0;
  const ImageLimits* limits = nullptr;
  std::jmp_buf jump;
  char message[256] = {};
  RgbImage img;
  std::vector<uint8_t> rgba;  // with alpha: the rows before compositing
  std::vector<png_bytep> rows;
  Status status;
};

[[noreturn]] void on_error(png_structp png, png_const_charp msg) {
  auto* job = static_cast<Job*>(png_get_error_ptr(png));
  std::snprintf(job->message, sizeof(job->message), "%s", msg);
  std::longjmp(job->jump, 1);
}

void on_warning(png_structp, png_const_charp) {}

void on_read(png_structp png, png_bytep out, size_t n) {
  auto* job = static_cast<Job*>(png_get_io_ptr(png));
  if (n > job->bytes.size() - job->offset) png_error(png, "the data is truncated");
  std::memcpy(out, job->bytes.data() + job->offset, n);
  job->offset += n;
}

bool run(Job* job, png_structp png, png_infop info) {
  if (setjmp(job->jump) != 0) {
    job->status = invalid_argument(std::string("corrupt PNG image: ") + job->message);
    return false;
  }
  png_set_read_fn(png, job, on_read);
  // Dimensions are checked (and named) by check_dimensions right after the header.
  png_set_user_limits(png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);
  png_set_chunk_malloc_max(png, kMaxChunkBytes);
  png_read_info(png, info);
  const png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  job->status = check_dimensions(w, h, *job->limits, "PNG");
  if (!job->status.is_ok()) return false;
  const int depth = png_get_bit_depth(png, info), color = png_get_color_type(png, info);
  if (depth == 16) png_set_strip_16(png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  const bool alpha =
      (color & PNG_COLOR_MASK_ALPHA) != 0 || png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  if (png_get_valid(png, info, PNG_INFO_tRNS) != 0) png_set_tRNS_to_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const size_t channels = alpha ? 4 : 3;
  if (png_get_rowbytes(png, info) != static_cast<size_t>(w) * channels) {
    job->status = invalid_argument("PNG image: unsupported colour layout");
    return false;
  }
  RgbImage& img = job->img;
  img.width = static_cast<int>(w);
  img.height = static_cast<int>(h);
  std::vector<uint8_t>& buf = alpha ? job->rgba : img.pixels;
  buf.resize(static_cast<size_t>(w) * h * channels);
  job->rows.resize(h);
  for (png_uint_32 y = 0; y < h; ++y)
    job->rows[y] = buf.data() + static_cast<size_t>(y) * w * channels;
  png_read_image(png, job->rows.data());
  png_read_end(png, nullptr);
  if (alpha) {
    img.pixels.resize(static_cast<size_t>(w) * h * 3);
    composite_over_white(job->rgba.data(), static_cast<int64_t>(w) * h, img.pixels.data());
  }
  return true;
}

}  // namespace

Result<RgbImage> decode_png(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  auto job = std::make_unique<Job>();
  job->bytes = bytes;
  job->limits = &limits;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, job.get(), on_error, on_warning);
  if (png == nullptr) return resource_exhausted("PNG: out of memory");
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return resource_exhausted("PNG: out of memory");
  }
  const bool ok = run(job.get(), png, info);
  png_destroy_read_struct(&png, &info, nullptr);
  if (!ok) return job->status;
  return std::move(job->img);
}

}  // namespace llmserve::vision
