#include "mnist_data.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <vector>

namespace mnist {
namespace {

constexpr int kRows = 28;
constexpr int kCols = 28;
constexpr float kMean = 0.1307f;
constexpr float kStd = 0.3081f;
constexpr const char* kWhere =
    "; MNIST is the four IDX files train-images-idx3-ubyte, train-labels-idx1-ubyte, "
    "t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte (plain or .gz) from the MNIST database "
    "(e.g. as downloaded by torchvision.datasets.MNIST into MNIST/raw); or use --synthetic N";

std::string find_file(const std::string& dir, const std::string& name) {
  for (const std::string& candidate : {dir + "/" + name, dir + "/" + name + ".gz"}) {
    if (std::filesystem::exists(candidate)) return candidate;
  }
  // What to do, in one line: the first run of a newcomer ends here.
  throw DataError("no MNIST data in " + dir + ": " + dir + "/" + name +
                  "[.gz] is missing; give --data DIR holding the four IDX files "
                  "train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and "
                  "t10k-labels-idx1-ubyte (plain or .gz, e.g. torchvision's MNIST/raw), or "
                  "--synthetic N to train on N generated images");
}

// gzread reads plain files as they are, so one reader serves both forms.
std::vector<unsigned char> read_all(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw DataError("cannot open " + path + kWhere);
  std::vector<unsigned char> data;
  unsigned char buffer[1 << 16];
  int n = 0;
  while ((n = gzread(f, buffer, sizeof buffer)) > 0) data.insert(data.end(), buffer, buffer + n);
  const bool failed = n < 0;
  gzclose(f);
  if (failed) throw DataError("corrupt or truncated gzip data in " + path + kWhere);
  return data;
}

std::uint32_t be32(const std::vector<unsigned char>& d, std::size_t at) {
  return (std::uint32_t{d[at]} << 24) | (std::uint32_t{d[at + 1]} << 16) |
         (std::uint32_t{d[at + 2]} << 8) | std::uint32_t{d[at + 3]};
}

torch::Tensor normalize(torch::Tensor raw_bytes_as_float) {
  return (raw_bytes_as_float / 255.0f - kMean) / kStd;
}

}  // namespace

Dataset load_mnist(const std::string& dir, const std::string& prefix) {
  const std::string images_path = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_file(dir, prefix + "-labels-idx1-ubyte");
  const auto images = read_all(images_path);
  const auto labels = read_all(labels_path);
  if (images.size() < 16 || be32(images, 0) != 2051) {
    throw DataError(images_path + " is not an IDX image file (bad magic number)" + kWhere);
  }
  if (labels.size() < 8 || be32(labels, 0) != 2049) {
    throw DataError(labels_path + " is not an IDX label file (bad magic number)" + kWhere);
  }
  const std::int64_t n = be32(images, 4);
  if (be32(images, 8) != kRows || be32(images, 12) != kCols) {
    throw DataError(images_path + ": images are not 28x28" + kWhere);
  }
  if (static_cast<std::int64_t>(images.size()) != 16 + n * kRows * kCols) {
    throw DataError(images_path + ": truncated (header says " + std::to_string(n) + " images)" +
                    kWhere);
  }
  if (be32(labels, 4) != n || static_cast<std::int64_t>(labels.size()) != 8 + n) {
    throw DataError(labels_path + ": label count does not match " + images_path + kWhere);
  }
  for (std::int64_t i = 0; i < n; ++i) {
    if (labels[8 + i] > 9) throw DataError(labels_path + ": label above 9" + kWhere);
  }
  Dataset d;
  d.images = normalize(torch::from_blob(const_cast<unsigned char*>(images.data()) + 16,
                                        {n, 1, kRows, kCols}, torch::kUInt8)
                           .to(torch::kFloat32));
  d.labels = torch::from_blob(const_cast<unsigned char*>(labels.data()) + 8, {n}, torch::kUInt8)
                 .to(torch::kInt64);
  return d;
}

Dataset synthetic_mnist(std::int64_t n, std::uint64_t seed) {
  // Ten class templates: three thick strokes each, from a fixed seed so that
  // the classes are the same whatever `seed` is (train and test share them).
  std::vector<std::vector<float>> templates(10, std::vector<float>(kRows * kCols, 0.0f));
  std::mt19937 shape_rng(20240611);
  std::uniform_real_distribution<float> coord(5.0f, 22.0f);
  for (auto& t : templates) {
    for (int stroke = 0; stroke < 3; ++stroke) {
      const float x0 = coord(shape_rng), y0 = coord(shape_rng);
      const float x1 = coord(shape_rng), y1 = coord(shape_rng);
      for (int s = 0; s <= 40; ++s) {
        const float x = x0 + (x1 - x0) * static_cast<float>(s) / 40.0f;
        const float y = y0 + (y1 - y0) * static_cast<float>(s) / 40.0f;
        for (int dy = -1; dy <= 1; ++dy) {
          for (int dx = -1; dx <= 1; ++dx) {
            const int r = std::clamp(static_cast<int>(y) + dy, 0, kRows - 1);
            const int c = std::clamp(static_cast<int>(x) + dx, 0, kCols - 1);
            t[r * kCols + c] = 1.0f;
          }
        }
      }
    }
  }
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> shift(-2, 2);
  std::normal_distribution<float> noise(0.0f, 0.15f);
  std::vector<float> pixels(static_cast<std::size_t>(n) * kRows * kCols);
  std::vector<std::int64_t> labels(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const int label = static_cast<int>(rng() % 10);
    labels[static_cast<std::size_t>(i)] = label;
    const int sx = shift(rng), sy = shift(rng);
    float* out = pixels.data() + i * kRows * kCols;
    for (int r = 0; r < kRows; ++r) {
      for (int c = 0; c < kCols; ++c) {
        const int tr = r - sy, tc = c - sx;
        float v = (tr >= 0 && tr < kRows && tc >= 0 && tc < kCols)
                      ? templates[static_cast<std::size_t>(label)][tr * kCols + tc]
                      : 0.0f;
        out[r * kCols + c] = std::clamp(v + noise(rng), 0.0f, 1.0f);
      }
    }
  }
  Dataset d;
  d.images = normalize(
      torch::from_blob(pixels.data(), {n, 1, kRows, kCols}, torch::kFloat32).clone() * 255.0f);
  d.labels = torch::from_blob(labels.data(), {n}, torch::kInt64).clone();
  return d;
}

}  // namespace mnist
