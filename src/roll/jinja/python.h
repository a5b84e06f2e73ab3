#pragma once
// Python's str and number semantics over UTF-8 strings, as the chat templates rely on them:
// lengths, indices and slices count code points, strip()/split() use Python's notion of
// whitespace, floats print as repr() does. Case mapping is Unicode's simple (1:1) mapping, so
// Python's few 1:n cases (German sharp s -> "SS") differ.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "roll/core/utf8.h"

namespace roll::jinja::py {

// Code points of UTF-8 text; a byte that is not valid UTF-8 stands for itself, so no input fails.
std::u32string decode(std::string_view s);
std::string encode(std::u32string_view s);
using roll::append_utf8;  // core/utf8.h
std::size_t length(std::string_view s);  // len(s)

bool is_space(char32_t c);  // str.isspace()
// str.strip/lstrip/rstrip; `chars` null means whitespace.
std::string strip(std::string_view s, const std::string* chars, bool left = true, bool right = true);
// str.split(sep, maxsplit) / str.rsplit; `sep` null means runs of whitespace. An empty sep is a
// roll::Error ("empty separator"), as in Python.
std::vector<std::string> split(std::string_view s, const std::string* sep, std::int64_t maxsplit = -1);
std::vector<std::string> rsplit(std::string_view s, const std::string* sep, std::int64_t maxsplit = -1);
std::string replace(std::string_view s, std::string_view old, std::string_view with, std::int64_t count = -1);
std::int64_t find(std::string_view s, std::string_view sub);  // code-point index or -1
std::int64_t count(std::string_view s, std::string_view sub);
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string capitalize(std::string_view s);
std::string title(std::string_view s);
// str.islower() / str.isupper(): some cased character, and all of them in that case.
bool all_cased_are(std::string_view s, bool lower_case);

// The indices a Python slice [start:stop:step] selects from a sequence of `length` items.
// step 0 is a roll::Error.
std::vector<std::int64_t> slice_indices(std::int64_t length, std::optional<std::int64_t> start,
                                        std::optional<std::int64_t> stop, std::optional<std::int64_t> step);

std::string repr_str(std::string_view s);  // repr() of a str: quotes and escapes as Python picks them
std::string repr_float(double d);          // repr() of a float: shortest round-trip digits
// Floor division and modulo with Python's signs; division by zero is a roll::Error.
std::int64_t floor_div(std::int64_t a, std::int64_t b);
std::int64_t floor_mod(std::int64_t a, std::int64_t b);
double floor_mod(double a, double b);

}  // namespace roll::jinja::py
