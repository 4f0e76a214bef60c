#include "common/heap_return.h"

#include <cstdlib>  // defines __GLIBC__ where it is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <utility>

namespace dlaunch {

void return_free_heap() {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

PeriodicHeapReturn::PeriodicHeapReturn(asio::io_context& io, SteadyClock::duration period,
                                       std::function<void()> trim)
    : timer_(io), period_(period), trim_(std::move(trim)) {}

void PeriodicHeapReturn::start() {
  timer_.expires_after(period_);
  timer_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    trim_();
    start();
  });
}

}  // namespace dlaunch
