// CRC-32C (Castagnoli), the checksum of TFRecord framing, and the "masked"
// form TensorFlow stores: a CRC computed over data that itself contains CRCs
// is weak, so the stored value is rotated and offset.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mnist {

std::uint32_t crc32c(const void* data, std::size_t size);
std::uint32_t masked_crc32c(const void* data, std::size_t size);

}  // namespace mnist
