#pragma once
// `track_with: tensorboard`: TensorBoard event files written by us (tfevent.h), as ROLL's
// SummaryWriter does: numbers as scalars, strings as text, the config as hparams. One writer
// thread owns the file; log() only encodes and queues (bounded: a full queue makes log() wait).
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "roll/track/tracker.h"

namespace roll::track {

struct TensorBoardOptions {
  std::string log_dir;
  size_t max_queue = 1000;                              // ROLL: SummaryWriter(max_queue=1000)
  std::chrono::milliseconds flush_interval{10'000};     // ROLL: flush_secs=10
};

class TensorBoardTracker : public Tracker {
 public:
  // Creates log_dir and events.out.tfevents.<unix_secs>.<hostname>; roll::Error naming the path.
  explicit TensorBoardTracker(TensorBoardOptions options);
  ~TensorBoardTracker() override;
  const std::string& event_file() const { return path_; }
  void flush() override;   // returns once every queued record is on disk (fflush)
  void finish() override;  // flush, stop the writer, close the file

 protected:
  void write_metrics(int64_t step, const nlohmann::json& metrics) override;
  // A text summary `hparams` (markdown table) and the hparams plugin's session_start_info.
  void write_hparams(const nlohmann::json& flat_config) override;

 private:
  void enqueue(std::string record);
  void writer_loop();
  void throw_if_failed() const;  // with mu_ held

  TensorBoardOptions options_;
  std::string path_;
  std::FILE* file_ = nullptr;
  std::mutex mu_;
  std::condition_variable work_cv_, space_cv_, flushed_cv_;
  std::deque<std::string> queue_;
  uint64_t flush_requested_ = 0, flush_done_ = 0;
  bool stopping_ = false, finished_ = false;
  std::string error_;  // first write error of the writer thread
  std::thread writer_;
};

}  // namespace roll::track
