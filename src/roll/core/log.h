#pragma once
// Logging front end (spdlog). Kept tiny so any layer can log without heavy includes.
#include <fmt/format.h>

#include <string_view>

namespace roll::log {

enum class Level { debug, info, warn, error };

void write(Level level, std::string_view message);
void set_level(Level level);
// Tag printed in each line: ROLL's `[<WORKER_NAME> <RANK> / <WORLD_SIZE>]`.
void set_identity(std::string_view worker_name, int rank, int world_size);

template <typename... A>
void debug(fmt::format_string<A...> f, A&&... a) { write(Level::debug, fmt::format(f, std::forward<A>(a)...)); }
template <typename... A>
void info(fmt::format_string<A...> f, A&&... a) { write(Level::info, fmt::format(f, std::forward<A>(a)...)); }
template <typename... A>
void warn(fmt::format_string<A...> f, A&&... a) { write(Level::warn, fmt::format(f, std::forward<A>(a)...)); }
template <typename... A>
void error(fmt::format_string<A...> f, A&&... a) { write(Level::error, fmt::format(f, std::forward<A>(a)...)); }

}  // namespace roll::log
