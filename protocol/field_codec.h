// One list of a record's fields serves both directions of the wire: a
// record's `fields(codec, record)` names each field once, in wire order, with
// its bound, and is called with Encoder (which writes them) or with Decoder
// (which reads them and fails on anything out of bounds). What a record must
// satisfy across its fields is checked after decoding, by the caller.
//
//   template <class Codec, class M> void fields(Codec& c, M& m) {
//     c.u32(m.magic);
//     c.str(m.nonce, kNonceSize);
//     c.flag(m.restart);
//     c.list(m.targets, kMaxTargets, [&](auto& t) { c.i32(t.node); });
//   }
//
// M is const when encoding: each Encoder function takes its field by value
// or const reference, each Decoder function by reference.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/wire.h"

namespace dlaunch::wire {

class Encoder {
 public:
  explicit Encoder(Writer& w) : w_(w) {}
  void u8(std::uint8_t v) { w_.u8(v); }
  void u16(std::uint16_t v) { w_.u16(v); }
  void u32(std::uint32_t v) { w_.u32(v); }
  void u64(std::uint64_t v) { w_.u64(v); }
  void i32(std::int32_t v) { w_.i32(v); }
  void i64(std::int64_t v) { w_.i64(v); }
  void str(std::string_view s, std::size_t /*max*/) { w_.str(s); }
  void strings(const std::vector<std::string>& items, std::size_t /*max_items*/) {
    w_.strings(items);
  }
  void string_map(const std::map<std::string, std::string>& items) { w_.string_map(items); }
  // 0 or 1.
  void flag(bool v) { w_.u8(v ? 1 : 0); }
  // An enumeration sent as one byte, its values from `first` to `last`.
  template <class E>
  void enumeration(E v, E /*first*/, E /*last*/) {
    w_.u8(static_cast<std::uint8_t>(v));
  }
  // A count, then each item by `each`.
  template <class T, class Each>
  void list(const std::vector<T>& items, std::size_t /*max_items*/, Each each) {
    w_.u32(static_cast<std::uint32_t>(items.size()));
    for (const auto& item : items) each(item);
  }

 private:
  Writer& w_;
};

class Decoder {
 public:
  explicit Decoder(Reader& r) : r_(r) {}
  void u8(std::uint8_t& v) { v = r_.u8(); }
  void u16(std::uint16_t& v) { v = r_.u16(); }
  void u32(std::uint32_t& v) { v = r_.u32(); }
  void u64(std::uint64_t& v) { v = r_.u64(); }
  void i32(std::int32_t& v) { v = r_.i32(); }
  void i64(std::int64_t& v) { v = r_.i64(); }
  void str(std::string& s, std::size_t max) { s = r_.str(max); }
  void strings(std::vector<std::string>& items, std::size_t max_items) {
    items = r_.strings(max_items);
  }
  void string_map(std::map<std::string, std::string>& items) { items = r_.string_map(); }
  // One encoding per value: anything but 0 or 1 fails.
  void flag(bool& v) {
    const auto byte = r_.u8();
    if (byte > 1) bad_ = true;
    v = byte == 1;
  }
  template <class E>
  void enumeration(E& v, E first, E last) {
    const auto byte = r_.u8();
    if (byte < static_cast<std::uint8_t>(first) || byte > static_cast<std::uint8_t>(last))
      bad_ = true;
    v = static_cast<E>(byte);
  }
  // A count over `max_items` fails before anything is allocated for it.
  template <class T, class Each>
  void list(std::vector<T>& items, std::size_t max_items, Each each) {
    const auto count = r_.u32();
    if (failed() || count > max_items) {
      bad_ = true;
      return;
    }
    items.resize(count);
    for (auto& item : items) {
      each(item);
      if (failed()) return;
    }
  }

  // A field was short, over its bound or not one of its values.
  bool failed() const { return bad_ || !r_.ok(); }

 private:
  Reader& r_;
  bool bad_ = false;
};

}  // namespace dlaunch::wire
