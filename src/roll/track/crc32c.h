#pragma once
// CRC-32C (Castagnoli), as TFRecord framing uses it.
#include <cstdint>
#include <string_view>

namespace roll::track {

// Plain CRC-32C of `data` ("123456789" -> 0xE3069283).
uint32_t crc32c(std::string_view data);

// TFRecord stores CRCs masked, so that a CRC of data that itself holds CRCs stays well mixed.
uint32_t masked_crc32c(std::string_view data);

}  // namespace roll::track
