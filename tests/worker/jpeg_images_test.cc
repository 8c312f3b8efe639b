// The host pipeline's images: real JPEGs, decoded and cropped as a loader
// would, the same for the same draw.
#include "worker/engine/jpeg_images.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace gpubench::engine {
namespace {

TEST(JpegImages, AreCompressedPhotographsThatDecodeIntoNormalisedCrops) {
  auto images = JpegImages::Make(4, 112, 90, 7);
  ASSERT_TRUE(images.ok()) << images.status();
  ASSERT_EQ((*images)->size(), 4u);
  // Compressed, but not to nothing: about what a camera's JPEG is per pixel.
  const int64_t raw = int64_t{4} * 112 * 90 * 3;
  EXPECT_LT((*images)->encoded_bytes(), raw / 2);
  EXPECT_GT((*images)->encoded_bytes(), raw / 50);
  const int64_t h = 64, w = 64;
  std::vector<float> a(3 * h * w), b(3 * h * w), c(3 * h * w);
  ASSERT_TRUE((*images)->Sample(12345, h, w, a.data()).ok());
  ASSERT_TRUE((*images)->Sample(12345, h, w, b.data()).ok());
  ASSERT_TRUE((*images)->Sample(999, h, w, c.data()).ok());
  EXPECT_EQ(a, b);  // the same draw, the same sample
  EXPECT_NE(a, c);
  // Normalised with ImageNet's mean and std: every value within what a
  // pixel of 0..255 gives, and not a constant.
  const auto [lo, hi] = std::minmax_element(a.begin(), a.end());
  EXPECT_GE(*lo, (0 - 0.485f) / 0.229f - 1e-4f);
  EXPECT_LE(*hi, (1 - 0.406f) / 0.225f + 1e-4f);
  EXPECT_GT(*hi - *lo, 0.5f);
}

}  // namespace
}  // namespace gpubench::engine
