#pragma once
// Binary form of a Batch for files and the wire. Tensors travel as raw little-endian bytes (never JSON);
// non-tensor columns and meta travel as one msgpack blob (docs/design.md section 1: headers as msgpack).
//
// Layout of the header (all integers little-endian):
//   "RLBATCH\0" | u32 version | i64 batch_size | u32 n_tensors
//   n_tensors x { u32 name_len | name | u8 dtype | u8 ndim | i64 dims[ndim] | u64 nbytes }
//   u64 msgpack_len | msgpack {"columns": [[name, [cells...]], ...], "meta": {...}}
// serialize() appends the tensors' bytes to the header in order; to_frames() keeps them as separate frames.
#include <ATen/core/Tensor.h>

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "roll/core/batch.h"

namespace roll {

// One blob: header then every tensor's bytes. Exact round trip (bit-identical tensors, equal cells and meta).
std::string serialize(const Batch& batch);
// Always copies out of `bytes`. Truncated or corrupt input is a roll::Error saying what is wrong.
Batch deserialize(std::string_view bytes);

// Multipart form for ZeroMQ: frame 0 is `header`, frame 1 + i is the raw bytes of `tensors[i]`.
struct BatchFrames {
  std::string header;
  // Contiguous CPU tensors: the batch's own tensors when already contiguous on CPU (no copy), else copies.
  // They keep the bytes alive while frames are sent.
  std::vector<at::Tensor> tensors;

  size_t frame_count() const { return 1 + tensors.size(); }
  std::string_view tensor_bytes(size_t i) const;
};

BatchFrames to_frames(const Batch& batch);
// Rebuilds a batch from a header and one buffer per tensor. With `owner` set, tensors whose buffer is
// suitably aligned wrap the buffer without copying and keep `owner` (e.g. the received messages) alive;
// without it every tensor is copied.
Batch from_frames(std::string_view header, std::span<const std::string_view> buffers,
                  std::shared_ptr<const void> owner = nullptr);

}  // namespace roll
