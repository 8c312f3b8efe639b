// The report as a browser draws it: headless Chromium renders it to a PNG,
// decoded here, and the page must carry ink (a blank page must not).
#include "report/report.h"
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>
#include "common/spec.h"
#include "report/format.h"
#include "report/roofline.h"
#include "report/speedup.h"
#include "tests/report/report_fixtures.h"
#include "tests/support/read_file.h"

namespace gpubench::report {
namespace {

using fixtures::PipelineJob;
using fixtures::RooflineJob;
using fixtures::SweepJob;

// ---------------------------------------------------------------- PNG

struct Image {
  int width = 0;
  int height = 0;
  std::vector<uint32_t> pixels;  // RGBA, one word each, row-major
};

uint32_t Be32(const unsigned char* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 |
         p[3];
}

constexpr char kPngSignature[] = "\x89PNG\r\n\x1a\n";

// What a PNG's chunks hold: its header's fields and its image data, still
// deflated.
struct PngChunks {
  int depth = 0;
  int colour = 0;
  int interlace = 0;
  std::string idat;
};

// Reads the chunks after the signature up to IEND, checking each one's CRC;
// the image's size goes to image. Returns an error text, empty on success.
std::string ReadChunks(const std::string& file, Image* image,
                       PngChunks* chunks) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(file.data());
  bool ended = false;
  for (size_t pos = 8; pos + 12 <= file.size() && !ended;) {
    const uint32_t length = Be32(bytes + pos);
    if (pos + 12 + length > file.size()) return "truncated chunk";
    const std::string type(file, pos + 4, 4);
    const unsigned char* data = bytes + pos + 8;
    const uLong crc = crc32(crc32(0, nullptr, 0), bytes + pos + 4, length + 4);
    if (crc != Be32(data + length)) return "bad CRC in " + type;
    if (type == "IHDR") {
      if (length != 13) return "bad IHDR";
      image->width = static_cast<int>(Be32(data));
      image->height = static_cast<int>(Be32(data + 4));
      chunks->depth = data[8];
      chunks->colour = data[9];
      if (data[10] != 0 || data[11] != 0)
        return "unknown compression or filter method";
      chunks->interlace = data[12];
    } else if (type == "IDAT") {
      chunks->idat.append(reinterpret_cast<const char*>(data), length);
    } else if (type == "IEND") {
      ended = true;
    }
    pos += 12 + length;
  }
  return ended ? "" : "no IEND";
}

// What a byte's filter type adds back to it, given the bytes left of it (a),
// above it (b) and above and left (c); -1 for an unknown filter type.
int Predictor(int filter, int a, int b, int c) {
  switch (filter) {
    case 0:
      return 0;
    case 1:
      return a;
    case 2:
      return b;
    case 3:
      return (a + b) / 2;
    case 4: {
      const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b),
                pc = std::abs(p - c);
      return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
    }
    default:
      return -1;
  }
}

// Undoes each row's filter in raw (a filter type byte, then the row's bytes)
// into image's pixels. Returns an error text, empty on success.
std::string Unfilter(const std::vector<unsigned char>& raw, size_t channels,
                     Image* image) {
  const size_t stride = image->width * channels;
  std::vector<unsigned char> prev(stride, 0), cur(stride);
  image->pixels.resize(size_t(image->width) * image->height);
  for (int y = 0; y < image->height; ++y) {
    const unsigned char* line = raw.data() + y * (stride + 1);
    const int filter = line[0];
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= channels ? cur[x - channels] : 0;
      const int b = prev[x];
      const int c = x >= channels ? prev[x - channels] : 0;
      const int predictor = Predictor(filter, a, b, c);
      if (predictor < 0) return "bad filter type " + std::to_string(filter);
      cur[x] = static_cast<unsigned char>(line[1 + x] + predictor);
    }
    for (int x = 0; x < image->width; ++x) {
      const unsigned char* p = cur.data() + x * channels;
      image->pixels[size_t(y) * image->width + x] =
          uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 |
          (channels == 4 ? p[3] : 0xFF);
    }
    std::swap(prev, cur);
  }
  return "";
}

// Decodes an 8-bit RGB or RGBA non-interlaced PNG, which is what Chromium's
// screenshots are. Returns an error text, empty on success.
std::string DecodePng(const std::string& file, Image* image) {
  if (file.size() < 8 || std::memcmp(file.data(), kPngSignature, 8) != 0)
    return "not a PNG";
  PngChunks chunks;
  const std::string error = ReadChunks(file, image, &chunks);
  if (!error.empty()) return error;
  if (chunks.depth != 8 || (chunks.colour != 2 && chunks.colour != 6) ||
      chunks.interlace != 0) {
    return "unsupported: depth " + std::to_string(chunks.depth) +
           ", colour type " + std::to_string(chunks.colour) + ", interlace " +
           std::to_string(chunks.interlace);
  }
  const size_t channels = chunks.colour == 6 ? 4 : 3;
  const size_t stride = image->width * channels;
  std::vector<unsigned char> raw(image->height * (stride + 1));
  uLongf raw_size = raw.size();
  if (uncompress(raw.data(), &raw_size,
                 reinterpret_cast<const Bytef*>(chunks.idat.data()),
                 chunks.idat.size()) != Z_OK ||
      raw_size != raw.size()) {
    return "IDAT does not inflate to the image size";
  }
  return Unfilter(raw, channels, image);
}

struct Ink {
  double non_background_share = 0;  // pixels unlike the commonest colour
  size_t distinct_colours = 0;
};

Ink MeasureInk(const Image& image) {
  std::unordered_map<uint32_t, size_t> counts;
  for (uint32_t p : image.pixels) ++counts[p];
  size_t background = 0;
  for (const auto& [colour, n] : counts) background = std::max(background, n);
  Ink ink;
  ink.distinct_colours = counts.size();
  if (!image.pixels.empty()) {
    ink.non_background_share = 1.0 - double(background) / image.pixels.size();
  }
  return ink;
}

// Text and plots put ink on much of the page, anti-aliased in many shades.
bool LooksDrawn(const Ink& ink) {
  return ink.non_background_share > 0.01 && ink.distinct_colours > 20;
}

// A PNG with one row per filter type, so the decoder meets all five.
TEST(Png, DecodesEveryFilterType) {
  constexpr int kWidth = 7, kHeight = 5, kChannels = 3;
  std::vector<std::vector<unsigned char>> rows(
      kHeight, std::vector<unsigned char>(kWidth * 3));
  for (int y = 0; y < kHeight; ++y) {
    for (int x = 0; x < kWidth * kChannels; ++x)
      rows[y][x] = (y * 53 + x * 31 + x * x) & 0xFF;
  }
  std::string raw;
  for (int y = 0; y < kHeight; ++y) {
    raw += static_cast<char>(y);
    for (int x = 0; x < kWidth * kChannels; ++x) {
      const int a = x >= kChannels ? rows[y][x - kChannels] : 0;
      const int b = y > 0 ? rows[y - 1][x] : 0;
      const int c = x >= kChannels && y > 0 ? rows[y - 1][x - kChannels] : 0;
      const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b),
                pc = std::abs(p - c);
      const int predictor[] = {0, a, b, (a + b) / 2,
                               pa <= pb && pa <= pc ? a
                               : pb <= pc           ? b
                                                    : c};
      raw += static_cast<char>((rows[y][x] - predictor[y]) & 0xFF);
    }
  }
  std::vector<unsigned char> z(compressBound(raw.size()));
  uLongf z_size = z.size();
  ASSERT_EQ(compress(z.data(), &z_size,
                     reinterpret_cast<const Bytef*>(raw.data()), raw.size()),
            Z_OK);
  auto chunk = [](const std::string& type, const std::string& data) {
    auto be32 = [](uint32_t v) {
      std::string out;
      for (int shift = 24; shift >= 0; shift -= 8)
        out += static_cast<char>(v >> shift);
      return out;
    };
    const std::string body = type + data;
    return be32(data.size()) + body +
           be32(crc32(0, reinterpret_cast<const Bytef*>(body.data()),
                      body.size()));
  };
  const std::string ihdr({0, 0, 0, kWidth, 0, 0, 0, kHeight, 8, 2, 0, 0, 0});
  const std::string png =
      std::string(kPngSignature, 8) + chunk("IHDR", ihdr) +
      chunk("IDAT", std::string(reinterpret_cast<char*>(z.data()), z_size)) +
      chunk("IEND", "");
  Image image;
  ASSERT_EQ(DecodePng(png, &image), "");
  ASSERT_EQ(image.width, kWidth);
  ASSERT_EQ(image.height, kHeight);
  for (int y = 0; y < kHeight; ++y) {
    for (int x = 0; x < kWidth; ++x) {
      const unsigned char* p = rows[y].data() + x * kChannels;
      EXPECT_EQ(image.pixels[y * kWidth + x], uint32_t{p[0]} << 24 |
                                                  uint32_t{p[1]} << 16 |
                                                  uint32_t{p[2]} << 8 | 0xFF)
          << "filter " << y << " pixel " << x;
    }
  }
}

// ---------------------------------------------------------------- Chromium

constexpr int kShotWidth = 1280, kShotHeight = 2400;

std::string FindBrowser() {
  const char* path = std::getenv("PATH");
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    std::stringstream dirs(path == nullptr ? "/usr/bin" : path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      const std::string candidate = dir + "/" + name;
      if (!dir.empty() && access(candidate.c_str(), X_OK) == 0)
        return candidate;
    }
  }
  return "";
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

using testing_support::ReadFile;

// Screenshots html (written to a file named after `name`) with headless
// Chromium and decodes it. Fails the test, rather than skipping, without a
// browser: the report's promise is what a browser shows.
void Render(const std::string& name, const std::string& html, Image* image) {
  const std::string browser = FindBrowser();
  ASSERT_FALSE(browser.empty())
      << "no chromium, chromium-browser or google-chrome on PATH; "
         "deploy/build.sh installs "
         "the Debian package chromium (apt-get install chromium)";
  const std::string dir = ::testing::TempDir() + "/" + name;
  ASSERT_EQ(
      std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()),
      0);
  const std::string html_path = dir + "/report.html";
  const std::string png_path = dir + "/report.png";
  WriteFile(html_path, html);
  // A profile per test, so tests run in parallel do not share one.
  const std::string command = "timeout 60 '" + browser +
                              "' --headless --no-sandbox --disable-gpu "
                              "--hide-scrollbars --no-first-run "
                              "--disable-dev-shm-usage --user-data-dir='" +
                              dir + "/profile' --screenshot='" + png_path +
                              "' --window-size=" + std::to_string(kShotWidth) +
                              "," + std::to_string(kShotHeight) + " 'file://" +
                              html_path + "' >'" + dir + "/chromium.log' 2>&1";
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(command.c_str());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_EQ(status, 0) << command << "\n" << ReadFile(dir + "/chromium.log");
  std::cout << "chromium rendered " << html_path << " to " << png_path << " in "
            << seconds << " s\n";
  const std::string error = DecodePng(ReadFile(png_path), image);
  ASSERT_EQ(error, "") << png_path;
}

TEST(ReportRender, ChromiumDrawsTheReport) {
  Image image;
  ASSERT_NO_FATAL_FAILURE(
      Render("report_render",
             RenderReport({SweepJob(), PipelineJob()}, "nightly"), &image));
  EXPECT_EQ(image.width, kShotWidth);
  EXPECT_EQ(image.height, kShotHeight);
  const Ink ink = MeasureInk(image);
  std::cout << "report: " << ink.non_background_share << " of pixels inked, "
            << ink.distinct_colours << " colours\n";
  EXPECT_TRUE(LooksDrawn(ink))
      << ink.non_background_share << " of pixels inked, "
      << ink.distinct_colours << " colours";
}

TEST(ReportRender, ChromiumDrawsTheRoofline) {
  Image image;
  ASSERT_NO_FATAL_FAILURE(
      Render("report_render_roofline", RenderReport({RooflineJob()}, "roofline"), &image));
  EXPECT_TRUE(LooksDrawn(MeasureInk(image)));
}

// The check above must be able to fail: an empty page does.
TEST(ReportRender, BlankPageIsNotDrawn) {
  Image image;
  ASSERT_NO_FATAL_FAILURE(Render("report_render_blank", "", &image));
  EXPECT_EQ(image.width, kShotWidth);
  const Ink ink = MeasureInk(image);
  EXPECT_FALSE(LooksDrawn(ink))
      << ink.non_background_share << " of pixels inked, "
      << ink.distinct_colours << " colours";
}

}  // namespace
}  // namespace gpubench::report
