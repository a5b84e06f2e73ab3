// A prompt data file (JSONL, or a JSON array when it starts with '['), as rlvr/sft data readers open it.
#include "../fuzz_target.h"
#include "roll/pipeline/data/data_files.h"

ROLL_FUZZ_TARGET(prompt_data) {
  const bool array = !bytes.empty() && bytes.front() == '[';
  const std::string path = roll::fuzz::write_scratch(array ? "data/rows.json" : "data/rows.jsonl", bytes);
  for (const auto& record : roll::pipeline::read_json_records(path)) (void)record.value.is_object();
}
