// CPython's random.Random for an integer seed (MT19937 seeded by
// init_by_array, random() from two draws): rdzv_load.py draws each agent's
// jitter from one, and drawing the same numbers here gives both load
// generators the same connect schedule for the same --seed, so their runs
// differ only in what each costs.
#pragma once

#include <array>
#include <cstdint>

namespace dlaunch::load {

class PyRandom {
 public:
  explicit PyRandom(std::int64_t seed);
  double random();  // [0, 1), as random.random()
  double uniform(double a, double b) { return a + (b - a) * random(); }

 private:
  std::uint32_t next();

  static constexpr int kN = 624;
  std::array<std::uint32_t, kN> mt_{};
  int index_ = kN;
};

}  // namespace dlaunch::load
