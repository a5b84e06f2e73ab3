#pragma once
// TensorBoard event records, encoded by hand (no protobuf library): the few fields of
// tensorflow.Event / Summary / SummaryMetadata / TensorProto and of the hparams plugin's
// HParamsPluginData that TensorBoard reads, and TFRecord framing around each record.
// tests/oracles/tfevent.proto names the same fields for the independent reader.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace roll::track::tfevent {

// One encoded Summary.Value.
std::string scalar_value(std::string_view tag, float value);
// A text-plugin value (TensorProto of one DT_STRING), shown in TensorBoard's Text tab.
std::string text_value(std::string_view tag, std::string_view text);
// The hparams plugin's session_start_info: `flat` maps name -> number, bool or string.
std::string hparams_value(const nlohmann::json& flat, double start_time_secs);

// Encoded Event messages.
std::string file_version_event(double wall_time);  // first record: "brain.Event:2"
std::string summary_event(double wall_time, int64_t step, const std::vector<std::string>& values);

// TFRecord: uint64 length (LE), masked CRC32C of those 8 bytes, data, masked CRC32C of data.
std::string frame_record(std::string_view data);

}  // namespace roll::track::tfevent
