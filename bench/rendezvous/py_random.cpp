#include "bench/rendezvous/py_random.h"

#include <algorithm>
#include <vector>

namespace dlaunch::load {
namespace {
constexpr int kM = 397;
}  // namespace

PyRandom::PyRandom(std::int64_t seed) {
  // random.seed(n) keys the generator with |n| as little-endian 32-bit words
  // (one zero word for 0), then runs Matsumoto and Nishimura's init_by_array.
  std::uint64_t n =
      seed < 0 ? 0 - static_cast<std::uint64_t>(seed) : static_cast<std::uint64_t>(seed);
  std::vector<std::uint32_t> key;
  do {
    key.push_back(static_cast<std::uint32_t>(n));
    n >>= 32;
  } while (n != 0);

  mt_[0] = 19650218U;
  for (int i = 1; i < kN; ++i)
    mt_[i] = 1812433253U * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
  int i = 1;
  std::size_t j = 0;
  for (std::size_t k = std::max<std::size_t>(kN, key.size()); k > 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525U)) + key[j] +
             static_cast<std::uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
    if (j >= key.size()) j = 0;
  }
  for (int k = kN - 1; k > 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941U)) -
             static_cast<std::uint32_t>(i);
    ++i;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
  }
  mt_[0] = 0x80000000U;
  index_ = kN;
}

std::uint32_t PyRandom::next() {
  static constexpr std::uint32_t kMag01[2] = {0U, 0x9908b0dfU};
  static constexpr std::uint32_t kUpper = 0x80000000U;
  static constexpr std::uint32_t kLower = 0x7fffffffU;
  if (index_ >= kN) {
    int kk = 0;
    for (; kk < kN - kM; ++kk) {
      const std::uint32_t y = (mt_[kk] & kUpper) | (mt_[kk + 1] & kLower);
      mt_[kk] = mt_[kk + kM] ^ (y >> 1) ^ kMag01[y & 1U];
    }
    for (; kk < kN - 1; ++kk) {
      const std::uint32_t y = (mt_[kk] & kUpper) | (mt_[kk + 1] & kLower);
      mt_[kk] = mt_[kk + (kM - kN)] ^ (y >> 1) ^ kMag01[y & 1U];
    }
    const std::uint32_t y = (mt_[kN - 1] & kUpper) | (mt_[0] & kLower);
    mt_[kN - 1] = mt_[kM - 1] ^ (y >> 1) ^ kMag01[y & 1U];
    index_ = 0;
  }
  std::uint32_t y = mt_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= y >> 18;
  return y;
}

double PyRandom::random() {
  const std::uint32_t a = next() >> 5;
  const std::uint32_t b = next() >> 6;
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

}  // namespace dlaunch::load
