#include "roll/track/tracker.h"

#include <fmt/format.h>

#include <ctime>

#include "roll/config/tracker_names.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/track/hparams.h"
#include "roll/track/tensorboard_tracker.h"
#include "roll/track/text_trackers.h"

namespace roll::track {

std::string strip_reducer_tag(std::string_view key) {
  const size_t at = key.rfind('@');
  return std::string(at == std::string_view::npos ? key : key.substr(0, at));
}

void Tracker::log(int64_t step, const nlohmann::json& metrics) {
  if (!metrics.is_object()) throw Error("tracker: metrics of step " + std::to_string(step) + " must be an object, got " + metrics.type_name());
  nlohmann::json clean = nlohmann::json::object();
  for (const auto& [key, v] : metrics.items()) {
    if (v.is_structured())
      throw Error(fmt::format("tracker: metric '{}' of step {} is a {}; trackers take numbers and strings", key, step, v.type_name()));
    clean[strip_reducer_tag(key)] = v;
  }
  write_metrics(step, clean);
}

void Tracker::log_hparams(const nlohmann::json& flat_config) {
  if (!flat_config.is_object()) throw Error(std::string("tracker: hparams must be an object, got ") + flat_config.type_name());
  nlohmann::json flat = nlohmann::json::object();
  for (const auto& [key, v] : flat_config.items()) flat[key] = v.is_null() ? nlohmann::json("None") : v.is_primitive() ? v : nlohmann::json(v.dump());
  write_hparams(flat);
}

void MultiTracker::write_metrics(int64_t step, const nlohmann::json& metrics) {
  for (auto& t : trackers_) t->write_metrics(step, metrics);
}
void MultiTracker::write_hparams(const nlohmann::json& flat_config) {
  for (auto& t : trackers_) t->write_hparams(flat_config);
}
void MultiTracker::flush() {
  for (auto& t : trackers_) t->flush();
}
void MultiTracker::finish() {
  for (auto& t : trackers_) t->finish();
}

namespace {

// tracker_kwargs.<key> as a string, or "" when absent.
std::string kwarg_string(const config::NodePtr& kwargs, const std::string& key) {
  if (!kwargs || kwargs->is_null()) return "";
  if (!kwargs->is_map()) throw ConfigError("tracker_kwargs", "tracker_kwargs must be a mapping, got a " + std::string(kwargs->kind_name()));
  const config::NodePtr v = kwargs->get(key);
  if (!v || v->is_null()) return "";
  if (!v->is_scalar())
    throw ConfigError("tracker_kwargs." + key, "tracker_kwargs." + key + " must be a string, got a " + v->kind_name());
  return v->text();
}

// The directory key of tracker_kwargs: log_dir (ROLL's tensorboard), or swanlab's own logdir.
std::string log_dir_key(const config::BaseConfig& config) {
  if (config.track_with == "swanlab" && kwarg_string(config.tracker_kwargs, "log_dir").empty() &&
      !kwarg_string(config.tracker_kwargs, "logdir").empty())
    return "logdir";
  return "log_dir";
}

}  // namespace

std::string tracker_log_dir(const config::BaseConfig& config, std::chrono::system_clock::time_point start) {
  std::string root = kwarg_string(config.tracker_kwargs, log_dir_key(config));
  if (root.empty()) root = config.output_dir;
  const std::time_t t = std::chrono::system_clock::to_time_t(start);
  std::tm tm{};
  localtime_r(&t, &tm);  // ROLL: datetime.now().strftime("%Y%m%d-%H%M%S")
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return fmt::format("{}/{}/{}", root, config.exp_name.value_or("roll"), stamp);
}

std::unique_ptr<Tracker> make_tracker(const std::string& name, const std::string& log_dir) {
  if (name.empty()) return std::make_unique<NullTracker>();
  if (name == "stdout") return std::make_unique<StdoutTracker>();
  if (name == "jsonl") return std::make_unique<JsonlTracker>(log_dir);
  if (name == "tensorboard") return std::make_unique<TensorBoardTracker>(TensorBoardOptions{log_dir});
  if (config::is_upload_tracker(name)) {
    std::vector<std::unique_ptr<Tracker>> both;
    both.push_back(std::make_unique<TensorBoardTracker>(TensorBoardOptions{log_dir}));
    both.push_back(std::make_unique<JsonlTracker>(log_dir));
    return std::make_unique<MultiTracker>(std::move(both));
  }
  throw ConfigError("track_with", fmt::format("track_with: unknown tracker '{}' (ROLL's registry has tensorboard, "
                                              "wandb, swanlab, stdout and trackio); valid names: {}",
                                              name, config::kTrackerNames));
}

std::unique_ptr<Tracker> make_tracker(const config::BaseConfig& config, const config::NodePtr& written_config,
                                      std::chrono::system_clock::time_point start) {
  const std::string& name = config.track_with;
  std::string log_dir;
  if (name == "jsonl" || name == "tensorboard" || config::is_upload_tracker(name)) {
    log_dir = tracker_log_dir(config, start);
    const std::string dir_key = log_dir_key(config);
    if (config.tracker_kwargs && config.tracker_kwargs->is_map())
      for (const auto& [key, v] : config.tracker_kwargs->entries())
        if (key != dir_key)
          log::warn("tracker_kwargs.{} is ignored by the {} tracker", key, name);
  }
  auto tracker = make_tracker(name, log_dir);
  if (config::is_upload_tracker(name)) log::warn("{}", config::upload_tracker_notice(name, log_dir));
  else if (!log_dir.empty()) log::info("{} tracker writes to {}", name, log_dir);
  tracker->log_hparams(flatten_config(written_config));
  return tracker;
}

}  // namespace roll::track
