// JPEG through libjpeg(-turbo). libjpeg reports fatal errors through error_exit, which must not
// return: it longjmps back to decode_jpeg (only C frames lie between, so no destructor is skipped).
#include <csetjmp>
#include <cstdio>
#include <memory>
#include <string>

#include <jerror.h>
#include <jpeglib.h>

#include "engine/vision/image_codecs.h"

namespace llmserve::vision {
namespace {

constexpr int kMaxScans = 500;  // progressive files with thousands of scans cost CPU, not pixels

struct ErrorManager {
  jpeg_error_mgr pub;  // first: libjpeg casts the pointer
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {};
  bool truncated = false;
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void on_message(j_common_ptr cinfo, int level) {
  // Warnings (level -1) are tolerated as Pillow tolerates them, except running out of data.
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) err->truncated = true;
}

void on_progress(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number > kMaxScans) {
    auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
    std::snprintf(err->message, sizeof(err->message), "more than %d progressive scans", kMaxScans);
    std::longjmp(err->jump, 1);
  }
}

// Everything between setjmp and a longjmp lives in *job (the caller's frame), so nothing of this
// frame is read after the jump.
struct Job {
  std::span<const uint8_t> bytes;
  const ImageLimits* limits = nullptr;
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  jpeg_progress_mgr progress;
  RgbImage img;
  Status status;
};

// False with job->status set on any error; cinfo is destroyed either way.
bool run(Job* job) {
  jpeg_decompress_struct* cinfo = &job->cinfo;
  cinfo->err = jpeg_std_error(&job->err.pub);
  job->err.pub.error_exit = on_error;
  job->err.pub.emit_message = on_message;
  if (setjmp(job->err.jump) != 0) {
    jpeg_destroy_decompress(cinfo);
    job->status = invalid_argument(std::string("corrupt JPEG image: ") + job->err.message);
    return false;
  }
  jpeg_create_decompress(cinfo);
  job->progress.progress_monitor = on_progress;
  cinfo->progress = &job->progress;
  jpeg_mem_src(cinfo, job->bytes.data(), static_cast<unsigned long>(job->bytes.size()));
  jpeg_read_header(cinfo, TRUE);
  job->status = check_dimensions(cinfo->image_width, cinfo->image_height, *job->limits, "JPEG");
  if (job->status.is_ok() &&
      (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK)) {
    job->status = invalid_argument("CMYK JPEG images are not supported");
  }
  if (!job->status.is_ok()) {
    jpeg_destroy_decompress(cinfo);
    return false;
  }
  cinfo->out_color_space = JCS_RGB;
  jpeg_start_decompress(cinfo);
  RgbImage& img = job->img;
  img.width = static_cast<int>(cinfo->output_width);
  img.height = static_cast<int>(cinfo->output_height);
  img.pixels.resize(static_cast<size_t>(img.width) * img.height * 3);
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = img.pixels.data() + static_cast<size_t>(cinfo->output_scanline) * img.width * 3;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  jpeg_destroy_decompress(cinfo);
  if (job->err.truncated) {
    job->status = invalid_argument("corrupt JPEG image: the data is truncated");
    return false;
  }
  return true;
}

}  // namespace

Result<RgbImage> decode_jpeg(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  auto job = std::make_unique<Job>();
  job->bytes = bytes;
  job->limits = &limits;
  if (!run(job.get())) return job->status;
  return std::move(job->img);
}

}  // namespace llmserve::vision
