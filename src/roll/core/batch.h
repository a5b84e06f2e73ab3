#pragma once
// roll::Batch: ROLL's DataProto. Named tensors sharing a leading dimension B, non-tensor columns of B JSON
// cells (ROLL's numpy object arrays: strings, ints, floats, dicts) and a JSON `meta` (ROLL's meta_info).
// Columns keep insertion order (as TensorDict and Python dicts do) so printing and serialization are stable.
#include <ATen/core/Tensor.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace roll {

using Cell = nlohmann::json;
using NonTensorColumn = std::vector<Cell>;

struct BatchGroups;

class Batch {
 public:
  // Size is taken from the first column added.
  Batch() = default;
  // A batch of `size` rows with no columns yet; every column added must have `size` rows.
  explicit Batch(int64_t size);

  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Tensors. set_tensor adds or replaces (a non-tensor column of that name is dropped, as ROLL's
  // __setitem__ does); its leading dim must equal size().
  void set_tensor(const std::string& key, at::Tensor value);
  const at::Tensor& tensor(const std::string& key) const;
  bool has_tensor(const std::string& key) const;
  void erase_tensor(const std::string& key);
  std::vector<std::string> tensor_keys() const;

  // Non-tensor columns (same replacement rule as set_tensor).
  void set_column(const std::string& key, NonTensorColumn cells);
  const NonTensorColumn& column(const std::string& key) const;
  bool has_column(const std::string& key) const;
  void erase_column(const std::string& key);
  std::vector<std::string> column_keys() const;
  const Cell& cell(const std::string& key, int64_t row) const;
  void set_cell(const std::string& key, int64_t row, Cell value);
  std::string get_string(const std::string& key, int64_t row) const;
  int64_t get_int(const std::string& key, int64_t row) const;
  double get_double(const std::string& key, int64_t row) const;  // accepts integer cells too

  bool has(const std::string& key) const { return has_tensor(key) || has_column(key); }
  void erase(const std::string& key);  // either kind
  // Renames a tensor or non-tensor column; the new name must be free.
  void rename(const std::string& old_key, const std::string& new_key);

  // Sub-batch with only the named columns (tensors shared, meta copied). Unknown keys are errors.
  Batch select(const std::vector<std::string>& tensor_keys, const std::vector<std::string>& column_keys) const;
  // Rows [begin, end): tensors are views, as TensorDict slicing.
  Batch slice(int64_t begin, int64_t end) const;
  // Rows in `index` order (may repeat rows). The tensor form accepts integer indices or a bool mask.
  Batch take(const std::vector<int64_t>& index) const;
  Batch take(const at::Tensor& index) const;
  // In place, as ROLL's reorder.
  void reorder(const std::vector<int64_t>& index) { *this = take(index); }
  void reorder(const at::Tensor& index) { *this = take(index); }

  // n parts with np.array_split sizes (the first B % n parts get one extra row), as ROLL's chunk. Each part
  // owns copies of its tensors so a worker mutating its chunk never writes into the caller's batch.
  std::vector<Batch> chunk(int64_t n) const;
  // Concatenates rows. Meta: keys in `global_keys` are merged across parts (dict values concatenated per
  // sub-key, sub-keys missing from a part skipped; other values collected into a list); the rest keep the
  // first part's value.
  static Batch concat(const std::vector<Batch>& parts, const std::set<std::string>& global_keys = {"metrics"});
  // Groups rows by the string form of the named columns (tensor or non-tensor), keys joined by "|".
  BatchGroups group_by(const std::vector<std::string>& keys) const;
  // interleave: each row n times in a row (a a b b); otherwise the whole batch n times (a b a b).
  Batch repeat(int64_t n, bool interleave = true) const;
  // Appends copies of leading rows until size() % divisor == 0 (ROLL's pad_dataproto_to_divisor); returns
  // the number of rows added, which unpad() removes again.
  int64_t pad_to_divisor(int64_t divisor);
  void unpad(int64_t pad);
  // ROLL's union: adds the other batch's columns; shared keys must hold equal values, meta keys likewise.
  void union_with(const Batch& other);

  // Deep copy: tensors, cells and meta share nothing with this batch.
  Batch clone() const;
  Batch to(at::Device device) const;
  // NPU rule of docs/workers.md: int64 tensors travel as int32 there.
  void cast_int64_to_int32();

  nlohmann::json meta = nlohmann::json::object();

 private:
  void check_rows(const std::string& key, int64_t rows, const char* kind);
  [[noreturn]] void throw_missing(const std::string& key, const char* kind) const;
  std::vector<std::pair<std::string, at::Tensor>>::const_iterator find_tensor(const std::string& key) const;
  std::vector<std::pair<std::string, NonTensorColumn>>::const_iterator find_column(const std::string& key) const;

  int64_t size_ = 0;
  bool sized_ = false;  // false until a size is given or a first column fixes it
  std::vector<std::pair<std::string, at::Tensor>> tensors_;
  std::vector<std::pair<std::string, NonTensorColumn>> columns_;
};

// group_by's result: groups in order of first appearance (ROLL returns a Python dict built that way).
struct BatchGroups {
  std::vector<std::pair<std::string, Batch>> entries;

  const Batch& at(const std::string& key) const;  // throws roll::Error naming the key and the groups
  bool contains(const std::string& key) const;
  size_t size() const { return entries.size(); }
  auto begin() const { return entries.begin(); }
  auto end() const { return entries.end(); }
};

// ROLL's reduce_metrics: each value that is a (possibly nested) list of numbers becomes its mean; numbers
// pass through. A non-numeric value is an error naming its key; an empty list gives NaN (as np.mean).
nlohmann::json reduce_metrics(const nlohmann::json& metrics);

}  // namespace roll
