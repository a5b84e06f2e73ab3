#pragma once
// `<worker>.data_args` (ROLL's DataArguments, docs/config.md).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "roll/config/node.h"
#include "roll/config/ordered.h"

namespace roll::config {

struct DataArguments {
  std::string template_name = "native";  // YAML key `template`
  std::vector<std::string> file_name;    // a string or a list in YAML
  Ordered<double> domain_interleave_probs;
  std::optional<std::string> messages;
  std::optional<std::string> prompt;
  std::string tag = "tag";
  std::string id = "id";
  std::string response = "solution";
  std::optional<int64_t> preprocessing_num_workers;
  std::string dataset_type = "json";
  std::vector<std::string> eval_file_name;

  template <typename V>
  void visit(V& v) {
    v("template", template_name);
    v("file_name", file_name);
    v("domain_interleave_probs", domain_interleave_probs);
    v("messages", messages);
    v("prompt", prompt);
    v("tag", tag);
    v("id", id);
    v("response", response);
    v("preprocessing_num_workers", preprocessing_num_workers);
    v("dataset_type", dataset_type);
    v("eval_file_name", eval_file_name);
    for (const char* k : {"image_max_pixels", "image_min_pixels", "video_max_pixels", "video_min_pixels",
                          "video_total_pixels", "video_fps", "video_max_frames", "video_resize_chunk_frames",
                          "image_folder", "video_folder", "audio_folder", "custom_data_kwargs_func", "max_samples",
                          "overwrite_cache", "cutoff_len"})
      v.inert(k);
  }
};

}  // namespace roll::config
