#include <doctest/doctest.h>

#include "common/utf8.h"

using namespace dlaunch;

TEST_CASE("utf8 sequences: valid lengths, and 0 for what is not one") {
  CHECK(utf8_sequence_length("a", 0) == 1);
  CHECK(utf8_sequence_length("\xc3\xa9", 0) == 2);
  CHECK(utf8_sequence_length("\xe2\x82\xac", 0) == 3);
  CHECK(utf8_sequence_length("\xf4\x8f\xbf\xbf", 0) == 4);  // U+10FFFF
  CHECK(utf8_sequence_length("\xf4\x90\x80\x80", 0) == 0);  // past U+10FFFF
  CHECK(utf8_sequence_length("\x80", 0) == 0);              // a stray continuation
  CHECK(utf8_sequence_length("\xe0\x80\xaf", 0) == 0);      // overlong
  CHECK(utf8_sequence_length("\xed\xb0\x80", 0) == 0);      // a surrogate
  CHECK(utf8_sequence_length("\xe2\x82", 0) == 0);          // cut short
}

TEST_CASE("printable text: UTF-8 without control characters") {
  CHECK(printable_utf8("gpu-node-7.example"));
  CHECK(printable_utf8("h\xc3\xb4te"));
  CHECK(printable_utf8(""));
  CHECK_FALSE(printable_utf8("a\x1b[2Jb"));  // an escape sequence
  CHECK_FALSE(printable_utf8("a\nb"));
  CHECK_FALSE(printable_utf8("a\x7f"));
  CHECK_FALSE(
      printable_utf8("a\xc2\x9b"
                     "2J"));  // C1 CSI
  CHECK_FALSE(printable_utf8("\xff"));
}

TEST_CASE("unprintable bytes show as \\xNN and the rest is kept") {
  CHECK(escape_unprintable("h\xc3\xb4te") == "h\xc3\xb4te");
  CHECK(escape_unprintable("a\x1b[2J\xff") == "a\\x1b[2J\\xff");
  CHECK(escape_unprintable("\xc2\x9b") == "\\xc2\\x9b");
}
