#include "common/heap_return.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

namespace dlaunch {
namespace {

// AddressSanitizer and ThreadSanitizer bring allocators of their own, which
// malloc_trim does not reach: the test is compiled out under them. So this file
// is not among the units (built under the sanitizers by scripts/test.sh) but
// an executable of its own, heap_return_tests, which tests/CMakeLists.txt
// builds and runs in unsanitized builds only, and fails if it ran no test case.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DLAUNCH_OWN_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DLAUNCH_OWN_ALLOCATOR 1
#endif
#endif

#if defined(__GLIBC__) && !defined(DLAUNCH_OWN_ALLOCATOR)
long resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

// What the coordinator meets after a burst: most of 64 MiB of small blocks
// freed, with a block still in use every 256 KiB, so that malloc's own
// trimming of the heap's top cannot give any of it back.
TEST_CASE("return_free_heap gives back free memory in the middle of the heap") {
  constexpr std::size_t kBlock = 4000, kBlocks = 16384, kKeepEvery = 64;
  std::vector<char*> blocks(kBlocks);
  for (auto& b : blocks) {
    b = static_cast<char*>(std::malloc(kBlock));
    REQUIRE(b != nullptr);
    std::memset(b, 1, kBlock);  // resident
  }
  for (std::size_t i = 0; i < kBlocks; ++i) {
    if (i % kKeepEvery != kKeepEvery - 1) {
      std::free(blocks[i]);
      blocks[i] = nullptr;
    }
  }
  const long before = resident_bytes();
  return_free_heap();
  const long after = resident_bytes();
  MESSAGE("RSS before the trim ", before / 1024, " KiB, after ", after / 1024, " KiB");
  CHECK(before - after > 32L * 1024 * 1024);
  for (char* b : blocks) std::free(b);
}
#endif

}  // namespace
}  // namespace dlaunch
