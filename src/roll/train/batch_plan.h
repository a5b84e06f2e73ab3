#pragma once
// Which rows of a worker's batch each micro-batch trains on (docs/rl.md): `ppo_epochs` passes over
// the rows, each shuffled by one generator seeded with `seed`, cut into mini-batches of
// per_device_train_batch_size x gradient_accumulation_steps rows (one optimizer step each; the
// last may be short) and those into micro-batches of per_device_train_batch_size rows.
//
// The shuffle replays what ROLL's DataProto.make_iterator gets from torch's DataLoader with a
// seeded generator: per epoch, the loader iterator draws one int64 (its base seed), then
// RandomSampler draws randperm(n) for the order and, when exhausted, one more randperm(n).
#include <cstdint>
#include <vector>

namespace roll::train {

struct MiniBatchPlan {
  std::vector<std::vector<int64_t>> micro_batches;  // row indices, per micro-batch
};

std::vector<MiniBatchPlan> plan_mini_batches(int64_t rows, int64_t per_device_train_batch_size,
                                             int64_t gradient_accumulation_steps, int64_t ppo_epochs, uint64_t seed,
                                             bool shuffle = true);

}  // namespace roll::train
