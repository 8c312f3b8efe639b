// JpegImages: the images a host input pipeline loads. A small data set of
// encoded JPEG photographs-to-be (smooth colour fields with edges and
// noise, as a camera's would compress), made in memory when the pipeline
// starts, and the work an image data loader does per sample: JPEG decode
// (libjpeg-turbo, as PIL's), a random resized crop, a flip, normalisation.
// Torch-free; thread-safe once made (Sample is const).
#ifndef GPUBENCH_WORKER_ENGINE_JPEG_IMAGES_H_
#define GPUBENCH_WORKER_ENGINE_JPEG_IMAGES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpubench::engine {

class JpegImages {
 public:
  // `count` images of width x height pixels, encoded at quality 90.
  static absl::StatusOr<std::unique_ptr<JpegImages>> Make(int count, int width, int height,
                                                          uint64_t seed);

  // One training sample as torchvision's RandomResizedCrop(scale 0.08-1,
  // ratio 3/4-4/3), RandomHorizontalFlip and Normalize(ImageNet mean, std)
  // make it: image `random % size()` decoded, the crop resized bilinearly to
  // h x w, written as floats into dst[3][h][w]. `random` picks everything.
  absl::Status Sample(uint64_t random, int64_t h, int64_t w, float* dst) const;

  size_t size() const { return encoded_.size(); }
  // The data set's encoded size, all images.
  int64_t encoded_bytes() const;
  int width() const { return width_; }
  int height() const { return height_; }

 private:
  JpegImages(int width, int height) : width_(width), height_(height) {}

  const int width_, height_;
  std::vector<std::string> encoded_;
};

}  // namespace gpubench::engine

#endif  // GPUBENCH_WORKER_ENGINE_JPEG_IMAGES_H_
