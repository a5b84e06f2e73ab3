#include "roll/runtime/dispatch.h"

#include "roll/core/error.h"

namespace roll::runtime {

std::string_view to_string(Dispatch d) {
  switch (d) {
    case Dispatch::one_to_all: return "ONE_TO_ALL";
    case Dispatch::one_to_all_one: return "ONE_TO_ALL_ONE";
    case Dispatch::all_to_all: return "ALL_TO_ALL";
    case Dispatch::dp_mp_compute: return "DP_MP_COMPUTE";
  }
  return "?";
}

DispatchPlan plan_dispatch(Dispatch mode, const Payload& args, int world_size) {
  if (world_size < 1) throw Error("dispatch: a cluster needs at least one worker");
  DispatchPlan plan;
  switch (mode) {
    case Dispatch::one_to_all:
    case Dispatch::one_to_all_one:
      plan.per_rank.assign(static_cast<size_t>(world_size), args);
      return plan;
    case Dispatch::all_to_all:
      throw Error("dispatch: ALL_TO_ALL takes one argument set per rank (use Cluster::call_each)");
    case Dispatch::dp_mp_compute: {
      if (!args.batch) throw Error("dispatch: DP_MP_COMPUTE needs a Batch to split");
      Batch padded = *args.batch;
      plan.pad = padded.pad_to_divisor(world_size);
      std::vector<Batch> chunks = padded.chunk(world_size);
      for (auto& c : chunks) plan.per_rank.emplace_back(args.args, std::move(c));
      return plan;
    }
  }
  return plan;
}

Payload collect_one(Dispatch mode, std::vector<Payload> results, int64_t pad) {
  if (results.empty()) throw Error("dispatch: no results to collect");
  if (mode != Dispatch::dp_mp_compute) return std::move(results.front());
  Payload out;
  out.args = std::move(results.front().args);
  std::vector<Batch> parts;
  for (size_t r = 0; r < results.size(); ++r) {
    if (!results[r].batch)
      throw Error("dispatch: DP_MP_COMPUTE result of rank " + std::to_string(r) + " has no Batch");
    parts.push_back(std::move(*results[r].batch));
  }
  Batch merged = Batch::concat(parts);
  if (pad > 0) merged.unpad(pad);
  out.batch = std::move(merged);
  return out;
}

}  // namespace roll::runtime
