#include "worker/engine/jpeg_images.h"

#include <csetjmp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>

#include "absl/strings/str_cat.h"

namespace gpubench::engine {
namespace {

constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};

// libjpeg reports errors through error_exit, which must not return: it
// jumps back to the call with the message.
struct ErrorJump {
  jpeg_error_mgr manager;
  jmp_buf back;
  char message[JMSG_LENGTH_MAX];
};

void JumpBack(j_common_ptr info) {
  ErrorJump* e = reinterpret_cast<ErrorJump*>(info->err);
  (*info->err->format_message)(info, e->message);
  longjmp(e->back, 1);
}

// A picture a camera might have taken, as far as a JPEG encoder can tell:
// smooth colour gradients, a few hard-edged shapes, and sensor noise.
std::vector<uint8_t> Picture(std::mt19937_64& rng, int width, int height) {
  std::uniform_real_distribution<float> unit(0, 1);
  std::normal_distribution<float> noise(0, 6);
  float base[3], fx[3], fy[3], phase[3];
  for (int c = 0; c < 3; ++c) {
    base[c] = 40 + 170 * unit(rng);
    fx[c] = 0.5f + 6 * unit(rng);
    fy[c] = 0.5f + 6 * unit(rng);
    phase[c] = 6.283f * unit(rng);
  }
  struct Box {
    int x0, y0, x1, y1;
    float rgb[3];
  };
  std::vector<Box> boxes(4 + rng() % 8);
  for (Box& b : boxes) {
    b.x0 = rng() % width;
    b.y0 = rng() % height;
    b.x1 = b.x0 + 1 + rng() % (width / 3);
    b.y1 = b.y0 + 1 + rng() % (height / 3);
    for (float& v : b.rgb) v = 255 * unit(rng);
  }
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const float u = static_cast<float>(x) / width, v = static_cast<float>(y) / height;
      float px[3];
      for (int c = 0; c < 3; ++c) {
        px[c] = base[c] + 50 * std::sin(6.283f * (fx[c] * u + fy[c] * v) + phase[c]);
      }
      for (const Box& b : boxes) {
        if (x >= b.x0 && x < b.x1 && y >= b.y0 && y < b.y1) {
          for (int c = 0; c < 3; ++c) px[c] = b.rgb[c];
        }
      }
      for (int c = 0; c < 3; ++c) {
        const float value = px[c] + noise(rng);
        rgb[(static_cast<size_t>(y) * width + x) * 3 + c] =
            static_cast<uint8_t>(std::min(255.0f, std::max(0.0f, value)));
      }
    }
  }
  return rgb;
}

absl::StatusOr<std::string> Encode(const std::vector<uint8_t>& rgb, int width, int height) {
  jpeg_compress_struct info;
  ErrorJump error;
  info.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = JumpBack;
  unsigned char* out = nullptr;
  unsigned long size = 0;  // NOLINT(runtime/int): libjpeg's type
  if (setjmp(error.back)) {
    jpeg_destroy_compress(&info);
    free(out);
    return absl::InternalError(absl::StrCat("JPEG encode: ", error.message));
  }
  jpeg_create_compress(&info);
  jpeg_mem_dest(&info, &out, &size);
  info.image_width = width;
  info.image_height = height;
  info.input_components = 3;
  info.in_color_space = JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, 90, TRUE);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(&rgb[static_cast<size_t>(info.next_scanline) * width * 3]);
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  std::string encoded(reinterpret_cast<const char*>(out), size);
  jpeg_destroy_compress(&info);
  free(out);
  return encoded;
}

// Decodes into *rgb (resized to fit); sets *width, *height.
absl::Status Decode(const std::string& jpeg, std::vector<uint8_t>* rgb, int* width,
                    int* height) {
  jpeg_decompress_struct info;
  ErrorJump error;
  info.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = JumpBack;
  if (setjmp(error.back)) {
    jpeg_destroy_decompress(&info);
    return absl::InternalError(absl::StrCat("JPEG decode: ", error.message));
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, reinterpret_cast<const unsigned char*>(jpeg.data()), jpeg.size());
  jpeg_read_header(&info, TRUE);
  info.out_color_space = JCS_RGB;
  jpeg_start_decompress(&info);
  *width = info.output_width;
  *height = info.output_height;
  const size_t stride = static_cast<size_t>(*width) * 3;
  rgb->resize(stride * *height);
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = rgb->data() + static_cast<size_t>(info.output_scanline) * stride;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return absl::OkStatus();
}

// torchvision's RandomResizedCrop.get_params: 8-100% of the area, aspect
// ratio 3/4 to 4/3 (log-uniform), ten tries, else the whole image.
void CropOf(std::mt19937_64& rng, int width, int height, int* x, int* y, int* w, int* h) {
  std::uniform_real_distribution<double> scale(0.08, 1.0);
  std::uniform_real_distribution<double> log_ratio(std::log(3.0 / 4), std::log(4.0 / 3));
  const double area = static_cast<double>(width) * height;
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * scale(rng);
    const double aspect = std::exp(log_ratio(rng));
    const int cw = static_cast<int>(std::lround(std::sqrt(target * aspect)));
    const int ch = static_cast<int>(std::lround(std::sqrt(target / aspect)));
    if (cw > 0 && cw <= width && ch > 0 && ch <= height) {
      *x = static_cast<int>(rng() % (width - cw + 1));
      *y = static_cast<int>(rng() % (height - ch + 1));
      *w = cw;
      *h = ch;
      return;
    }
  }
  *x = *y = 0;
  *w = width;
  *h = height;
}

}  // namespace

absl::StatusOr<std::unique_ptr<JpegImages>> JpegImages::Make(int count, int width, int height,
                                                             uint64_t seed) {
  if (count < 1 || width < 8 || height < 8) {
    return absl::InvalidArgumentError("JpegImages: needs an image of at least 8x8");
  }
  std::unique_ptr<JpegImages> images(new JpegImages(width, height));
  std::mt19937_64 rng(seed ^ 0x6A09E667F3BCC909ull);
  for (int i = 0; i < count; ++i) {
    auto encoded = Encode(Picture(rng, width, height), width, height);
    if (!encoded.ok()) return encoded.status();
    images->encoded_.push_back(std::move(*encoded));
  }
  return images;
}

int64_t JpegImages::encoded_bytes() const {
  int64_t bytes = 0;
  for (const std::string& e : encoded_) bytes += static_cast<int64_t>(e.size());
  return bytes;
}

absl::Status JpegImages::Sample(uint64_t random, int64_t h, int64_t w, float* dst) const {
  std::mt19937_64 rng(random);
  thread_local std::vector<uint8_t> rgb;
  int width = 0, height = 0;
  if (auto s = Decode(encoded_[random % encoded_.size()], &rgb, &width, &height); !s.ok()) {
    return s;
  }
  int cx, cy, cw, ch;
  CropOf(rng, width, height, &cx, &cy, &cw, &ch);
  const bool flip = rng() & 1;
  // Bilinear, pixel centres aligned (align_corners=False).
  const float sx = static_cast<float>(cw) / w, sy = static_cast<float>(ch) / h;
  for (int64_t oy = 0; oy < h; ++oy) {
    const float fy = std::max(0.0f, (oy + 0.5f) * sy - 0.5f);
    const int y0 = std::min(static_cast<int>(fy), ch - 1);
    const int y1 = std::min(y0 + 1, ch - 1);
    const float wy = fy - y0;
    for (int64_t ox = 0; ox < w; ++ox) {
      const int64_t tx = flip ? w - 1 - ox : ox;
      const float fx = std::max(0.0f, (tx + 0.5f) * sx - 0.5f);
      const int x0 = std::min(static_cast<int>(fx), cw - 1);
      const int x1 = std::min(x0 + 1, cw - 1);
      const float wx = fx - x0;
      const uint8_t* p00 = &rgb[(static_cast<size_t>(cy + y0) * width + cx + x0) * 3];
      const uint8_t* p01 = &rgb[(static_cast<size_t>(cy + y0) * width + cx + x1) * 3];
      const uint8_t* p10 = &rgb[(static_cast<size_t>(cy + y1) * width + cx + x0) * 3];
      const uint8_t* p11 = &rgb[(static_cast<size_t>(cy + y1) * width + cx + x1) * 3];
      for (int c = 0; c < 3; ++c) {
        const float top = p00[c] + wx * (p01[c] - p00[c]);
        const float bottom = p10[c] + wx * (p11[c] - p10[c]);
        const float value = top + wy * (bottom - top);
        dst[(c * h + oy) * w + ox] = (value / 255.0f - kMean[c]) / kStd[c];
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace gpubench::engine
