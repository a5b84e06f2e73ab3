#pragma once
// Integers read from JSON that a file or a peer wrote. nlohmann's get<int>() casts whatever number
// it finds (a float, or one out of the type's range: undefined behaviour); these accept only an
// integer within T's range and otherwise throw roll::Error naming `what`.
#include <fmt/format.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>

#include "roll/core/error.h"

namespace roll {

template <typename T>
T json_integer(const nlohmann::json& value, std::string_view what) {
  const bool in_range =
      (value.is_number_unsigned() &&
       value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())) ||
      (value.is_number_integer() && !value.is_number_unsigned() &&
       value.get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
       (value.get<int64_t>() < 0 ||
        static_cast<uint64_t>(value.get<int64_t>()) <= static_cast<uint64_t>(std::numeric_limits<T>::max())));
  if (!in_range)
    throw Error(fmt::format("{} is {}, not an integer in [{}, {}]", what, value.dump(), std::numeric_limits<T>::min(),
                            std::numeric_limits<T>::max()));
  return value.get<T>();
}

// object[key] as json_integer, or `fallback` when the key is absent.
template <typename T>
T json_integer_or(const nlohmann::json& object, const char* key, T fallback, std::string_view what) {
  const auto it = object.find(key);
  return it == object.end() ? fallback : json_integer<T>(*it, what);
}

}  // namespace roll
