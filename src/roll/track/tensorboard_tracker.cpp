#include "roll/track/tensorboard_tracker.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/track/hparams.h"
#include "roll/track/tfevent.h"

namespace roll::track {
namespace {

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

// TensorBoard reads every file whose name contains "tfevents". A second writer in the same
// directory and second (another process too: "x" opens exclusively) gets a numbered name.
std::FILE* create_event_file(const std::string& dir, std::string& path) {
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string base = dir + "/events.out.tfevents." + std::to_string(secs) + "." + hostname();
  path = base;
  for (int n = 1;; ++n) {
    if (std::FILE* f = std::fopen(path.c_str(), "wbx")) return f;
    if (errno != EEXIST) throw Error("tensorboard tracker: cannot create " + path + ": " + std::strerror(errno));
    path = base + "." + std::to_string(n);
  }
}

}  // namespace

TensorBoardTracker::TensorBoardTracker(TensorBoardOptions options) : options_(std::move(options)) {
  if (options_.max_queue == 0) options_.max_queue = 1;
  std::error_code ec;
  std::filesystem::create_directories(options_.log_dir, ec);
  if (ec) throw Error("tensorboard tracker: cannot create log directory " + options_.log_dir + ": " + ec.message());
  file_ = create_event_file(options_.log_dir, path_);
  queue_.push_back(tfevent::frame_record(tfevent::file_version_event(wall_time())));
  writer_ = std::thread([this] { writer_loop(); });
}

TensorBoardTracker::~TensorBoardTracker() {
  try {
    finish();
  } catch (const std::exception& e) {
    log::error("{}", e.what());
  }
}

void TensorBoardTracker::throw_if_failed() const {
  if (!error_.empty()) throw Error(error_);
}

void TensorBoardTracker::enqueue(std::string record) {
  std::unique_lock lock(mu_);
  space_cv_.wait(lock, [&] { return queue_.size() < options_.max_queue || stopping_ || !error_.empty(); });
  throw_if_failed();
  if (stopping_) throw Error("tensorboard tracker: " + path_ + " is already finished");
  queue_.push_back(std::move(record));
  work_cv_.notify_one();
}

void TensorBoardTracker::write_metrics(int64_t step, const nlohmann::json& metrics) {
  std::vector<std::string> values;
  for (const auto& [tag, v] : metrics.items()) {
    if (v.is_number() || v.is_boolean()) values.push_back(tfevent::scalar_value(tag, v.get<float>()));
    else if (v.is_string()) values.push_back(tfevent::text_value(tag, v.get<std::string>()));
    // null: nothing to plot (ROLL's writer skips values that are neither numbers nor strings).
  }
  if (values.empty()) return;
  enqueue(tfevent::frame_record(tfevent::summary_event(wall_time(), step, values)));
}

void TensorBoardTracker::write_hparams(const nlohmann::json& flat_config) {
  const double now = wall_time();
  enqueue(tfevent::frame_record(tfevent::summary_event(now, 0, {tfevent::text_value("hparams", hparams_markdown(flat_config))})));
  enqueue(tfevent::frame_record(tfevent::summary_event(now, 0, {tfevent::hparams_value(flat_config, now)})));
}

void TensorBoardTracker::writer_loop() {
  using clock = std::chrono::steady_clock;
  auto next_flush = clock::now() + options_.flush_interval;
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait_until(lock, next_flush, [&] { return !queue_.empty() || stopping_ || flush_requested_ > flush_done_; });
    std::deque<std::string> batch;
    batch.swap(queue_);
    const uint64_t requested = flush_requested_;
    const bool stopping = stopping_;
    const bool failed = !error_.empty();
    space_cv_.notify_all();
    lock.unlock();

    std::string error;
    for (const auto& record : batch)
      if (!failed && error.empty() && std::fwrite(record.data(), 1, record.size(), file_) != record.size())
        error = "tensorboard tracker: cannot write " + path_ + ": " + std::strerror(errno);
    const bool flush_now = requested > flush_done_ || stopping || clock::now() >= next_flush;
    if (flush_now) {
      if (!failed && error.empty() && std::fflush(file_) != 0)
        error = "tensorboard tracker: cannot write " + path_ + ": " + std::strerror(errno);
      next_flush = clock::now() + options_.flush_interval;
    }

    lock.lock();
    if (!error.empty() && error_.empty()) error_ = error;
    if (flush_now) {
      flush_done_ = requested;
      flushed_cv_.notify_all();
    }
    if (!error_.empty()) space_cv_.notify_all();  // blocked producers see the error
    if (stopping && queue_.empty()) return;
  }
}

void TensorBoardTracker::flush() {
  std::unique_lock lock(mu_);
  if (finished_) return;
  const uint64_t ticket = ++flush_requested_;
  work_cv_.notify_one();
  flushed_cv_.wait(lock, [&] { return flush_done_ >= ticket; });
  throw_if_failed();
}

void TensorBoardTracker::finish() {
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    finished_ = true;
    stopping_ = true;
  }
  work_cv_.notify_one();
  space_cv_.notify_all();
  writer_.join();
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  std::lock_guard lock(mu_);
  if (!closed && error_.empty()) error_ = "tensorboard tracker: cannot close " + path_ + ": " + std::strerror(errno);
  throw_if_failed();
}

}  // namespace roll::track
