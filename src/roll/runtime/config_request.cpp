#include "roll/runtime/config_request.h"

#include <filesystem>

#include "roll/core/json_number.h"

namespace roll::runtime {

nlohmann::json config_request_to_json(const config::LoadRequest& r) {
  nlohmann::json j;
  j["config_path"] = std::filesystem::absolute(r.compose.config_path).string();
  j["config_name"] = r.compose.config_name;
  j["overrides"] = r.compose.overrides;
  if (r.kind) j["kind"] = config::pipeline_kind_name(*r.kind);
  if (r.platform) j["platform"] = config::platform_rules(*r.platform).name;
  if (r.devices_per_node) j["devices_per_node"] = *r.devices_per_node;
  if (r.pure_opd) j["pure_opd"] = true;
  return j;
}

config::LoadRequest config_request_from_json(const nlohmann::json& j) {
  config::LoadRequest r;
  r.compose.config_path = j.at("config_path").get<std::string>();
  r.compose.config_name = j.at("config_name").get<std::string>();
  r.compose.overrides = j.value("overrides", std::vector<std::string>{});
  if (j.contains("kind")) {
    const std::string k = j["kind"].get<std::string>();
    for (auto kind : {config::PipelineKind::rlvr, config::PipelineKind::agentic, config::PipelineKind::sft,
                      config::PipelineKind::dpo, config::PipelineKind::distill})
      if (k == config::pipeline_kind_name(kind)) r.kind = kind;
  }
  if (j.contains("platform")) r.platform = config::parse_platform(j["platform"].get<std::string>());
  if (j.contains("devices_per_node")) r.devices_per_node = json_integer<int>(j["devices_per_node"], "devices_per_node");
  r.pure_opd = j.value("pure_opd", false);
  return r;
}

}  // namespace roll::runtime
