#pragma once
// The `track_with` names and what rollcpp does with each (docs/tracking.md). ROLL's registry is
// tensorboard, wandb, swanlab, stdout, trackio; rollcpp adds jsonl and "" (none). wandb, swanlab
// and trackio upload to a service; rollcpp never uses the network, so for them it writes the
// TensorBoard event files and metrics.jsonl into the log directory and says once how to upload
// them. Here (not in track/) so that `roll validate` can say the same as the run.
#include <string>
#include <string_view>

namespace roll::config {

inline constexpr std::string_view kTrackerNames = "tensorboard, wandb, swanlab, stdout, trackio, jsonl, \"\" (none)";

// wandb, swanlab, trackio: trackers that upload, written offline instead.
inline bool is_upload_tracker(std::string_view name) {
  return name == "wandb" || name == "swanlab" || name == "trackio";
}

// What the run writes for an upload tracker and how to upload it from `log_dir`.
inline std::string upload_tracker_notice(std::string_view name, std::string_view log_dir) {
  const std::string dir(log_dir);
  std::string how;
  if (name == "wandb") how = "upload with: wandb sync --sync-tensorboard " + dir;
  else if (name == "swanlab") how = "upload with: swanlab convert -t tensorboard --tb-log-dir " + dir;
  else how = "trackio has no TensorBoard import; " + dir + "/metrics.jsonl holds every step's metrics";
  return "track_with: " + std::string(name) + " uploads to a service and rollcpp never uses the network: the run "
         "writes TensorBoard event files and metrics.jsonl to " + dir + " instead; " + how;
}

}  // namespace roll::config
