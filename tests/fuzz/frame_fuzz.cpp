// libFuzzer target: the rendezvous frame decoder and message decoder, and the
// agent's launch spec decoder. Every peer-supplied byte goes through these.
// Invariants: no crash or sanitizer report, the decoder's buffer stays bounded,
// and whatever decodes re-encodes to the same bytes.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "protocol/frame.h"
#include "protocol/launch_spec.h"
#include "protocol/messages.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  // First byte picks the limit and the read size, so chunking is explored too.
  const bool pre_auth = (data[0] & 1) != 0;
  const std::size_t chunk = 1 + (data[0] >> 1);
  const std::string_view input = all.substr(1);
  dlaunch::FrameDecoder decoder(pre_auth ? dlaunch::kMaxPreAuthFrame : dlaunch::kMaxFrame);
  for (std::size_t at = 0; at < input.size(); at += chunk) {
    decoder.feed(input.substr(at, chunk));
    for (;;) {
      auto result = decoder.next();
      if (result.status != dlaunch::FrameDecoder::Status::ok) break;
      auto message = dlaunch::proto::decode(result.frame.type, result.frame.payload);
      if (!message) continue;
      const std::string again = dlaunch::proto::encode(*message);
      if (again.substr(5) != result.frame.payload) std::abort();
    }
    if (decoder.buffered() > dlaunch::kMaxFrame + chunk + 4) std::abort();
  }
  (void)dlaunch::decode_launch_spec_body(input);
  return 0;
}
