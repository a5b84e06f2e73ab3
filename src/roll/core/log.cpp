#include "roll/core/log.h"
#include "roll/core/log_sinks.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "roll/core/error.h"

namespace roll::log {
namespace {

// The line format, kept so sinks added later use it too.
std::string& current_pattern() {
  static std::string p = "[%Y-%m-%d %H:%M:%S,%e] [%l] [DRIVER 0 / 1][PID " + std::to_string(getpid()) + "] %v";
  return p;
}

std::shared_ptr<spdlog::logger> make_logger() {
  // Log lines go to stderr so stdout stays machine-readable (`roll validate` output, JSON).
  auto logger = spdlog::stderr_logger_mt("roll");
  logger->set_pattern(current_pattern());
  const char* debug = std::getenv("ROLL_DEBUG");
  logger->set_level(debug && std::string(debug) == "1" ? spdlog::level::debug : spdlog::level::info);
  return logger;
}

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> instance = make_logger();
  return *instance;
}

spdlog::level::level_enum to_spd(Level level) {
  switch (level) {
    case Level::debug: return spdlog::level::debug;
    case Level::info: return spdlog::level::info;
    case Level::warn: return spdlog::level::warn;
    case Level::error: return spdlog::level::err;
  }
  return spdlog::level::info;
}

}  // namespace

void write(Level level, std::string_view message) { logger().log(to_spd(level), message); }

void set_level(Level level) { logger().set_level(to_spd(level)); }

void set_identity(std::string_view worker_name, int rank, int world_size) {
  current_pattern() = fmt::format("[%Y-%m-%d %H:%M:%S,%e] [%l] [{} {} / {}][PID {}] %v", worker_name, rank,
                                  world_size, getpid());
  logger().set_pattern(current_pattern());
}

namespace {

std::mutex& files_mu() {
  static std::mutex mu;
  return mu;
}
std::vector<std::string>& file_list() {
  static std::vector<std::string> list;
  return list;
}

}  // namespace

void add_file(const std::string& path) {
  try {
    std::filesystem::path p(path);
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, false);
    sink->set_pattern(current_pattern());
    logger().sinks().push_back(std::move(sink));
    logger().flush_on(spdlog::level::debug);
    std::lock_guard<std::mutex> g(files_mu());
    file_list().push_back(path);
  } catch (const std::exception& e) {
    throw Error("cannot open the log file " + path + ": " + e.what());
  }
}

std::vector<std::string> files() {
  std::lock_guard<std::mutex> g(files_mu());
  return file_list();
}

void flush() { logger().flush(); }

}  // namespace roll::log
