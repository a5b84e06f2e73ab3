#pragma once
// ROLL's dispatch modes (docs/runtime.md, `decorator.py`) as pure functions: how one driver call becomes
// per-rank arguments, and how per-rank results become the call's result.
//   one_to_all      every rank gets the arguments; the result is every rank's output
//   one_to_all_one  every rank gets the arguments; the result is rank 0's output
//   all_to_all      the caller gives one argument set per rank; the result is every output
//   dp_mp_compute   the Batch is padded to a multiple of the data-parallel size (leading rows
//                   repeated, ROLL's pad_dataproto_to_divisor), split in equal chunks, one per
//                   rank; the outputs' Batches are concatenated in rank order and the padding
//                   removed; JSON results come from rank 0, meta "metrics" merged over ranks.
#include <string_view>
#include <vector>

#include "roll/runtime/rpc_message.h"

namespace roll::runtime {

enum class Dispatch { one_to_all, one_to_all_one, all_to_all, dp_mp_compute };
std::string_view to_string(Dispatch d);

struct DispatchPlan {
  std::vector<Payload> per_rank;
  int64_t pad = 0;  // rows added for dp_mp_compute
};

// one_to_all, one_to_all_one, dp_mp_compute. dp_mp_compute needs args.batch (roll::Error otherwise).
DispatchPlan plan_dispatch(Dispatch mode, const Payload& args, int world_size);
// The single result of one_to_all_one (rank 0) and dp_mp_compute (concatenated, unpadded).
Payload collect_one(Dispatch mode, std::vector<Payload> results, int64_t pad);

}  // namespace roll::runtime
