#include "roll/core/batch.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "roll/core/error.h"

namespace roll {
namespace {

template <typename Pairs>
std::vector<std::string> keys_of(const Pairs& pairs) {
  std::vector<std::string> keys;
  keys.reserve(pairs.size());
  for (const auto& [key, value] : pairs) keys.push_back(key);
  return keys;
}

std::string shape_string(const at::Tensor& t) { return fmt::format("[{}]", fmt::join(t.sizes(), ", ")); }

// Python's str(float): shortest round-trip digits, and a ".0" on integral values so 1.0 groups as "1.0"
// exactly as ROLL's str(numpy value) does.
template <typename F>
std::string python_float(F value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", value);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string cell_string(const Cell& cell) {
  switch (cell.type()) {
    case Cell::value_t::string: return cell.get_ref<const std::string&>();
    case Cell::value_t::boolean: return cell.get<bool>() ? "True" : "False";
    case Cell::value_t::null: return "None";
    case Cell::value_t::number_integer: return std::to_string(cell.get<int64_t>());
    case Cell::value_t::number_unsigned: return std::to_string(cell.get<uint64_t>());
    case Cell::value_t::number_float: return python_float(cell.get<double>());
    default: return cell.dump();
  }
}

// str() of one row of a CPU contiguous tensor in numpy's style: scalars bare, rows as "[1 2 3]".
void append_tensor_string(const at::Tensor& row, std::string& out) {
  if (row.dim() == 0) {
    if (row.scalar_type() == at::kBool) {
      out += row.item<bool>() ? "True" : "False";
    } else if (at::isIntegralType(row.scalar_type(), /*includeBool=*/false)) {
      out += std::to_string(row.item<int64_t>());
    } else if (row.scalar_type() == at::kDouble) {
      out += python_float(row.item<double>());
    } else {
      out += python_float(row.item<float>());
    }
    return;
  }
  out += '[';
  for (int64_t i = 0; i < row.size(0); ++i) {
    if (i > 0) out += ' ';
    append_tensor_string(row[i], out);
  }
  out += ']';
}

// Appends str(t[r]) to out[r] for every row; 1-D tensors (the usual grouping ids) avoid per-row tensor ops.
void append_column_strings(const at::Tensor& t, std::vector<std::string>& out) {
  const int64_t rows = t.size(0);
  if (t.dim() == 1 && t.scalar_type() != at::kBool) {
    if (at::isIntegralType(t.scalar_type(), /*includeBool=*/false)) {
      at::Tensor v = t.to(at::kLong).contiguous();
      const int64_t* p = v.data_ptr<int64_t>();
      for (int64_t r = 0; r < rows; ++r) out[r] += std::to_string(p[r]);
    } else if (t.scalar_type() == at::kDouble) {
      const double* p = t.data_ptr<double>();
      for (int64_t r = 0; r < rows; ++r) out[r] += python_float(p[r]);
    } else {
      at::Tensor v = t.to(at::kFloat).contiguous();
      const float* p = v.data_ptr<float>();
      for (int64_t r = 0; r < rows; ++r) out[r] += python_float(p[r]);
    }
    return;
  }
  for (int64_t r = 0; r < rows; ++r) append_tensor_string(t[r], out[r]);
}

int64_t checked_row(int64_t row, int64_t size, const std::string& key) {
  if (row < 0 || row >= size)
    throw Error(fmt::format("Batch: row {} of column '{}' is out of range (batch size {})", row, key, size));
  return row;
}

const char* json_type_name(const Cell& c) { return c.type_name(); }

// Flattens nested lists of numbers for reduce_metrics; false when a non-number is found.
bool collect_numbers(const nlohmann::json& v, std::vector<double>& out) {
  if (v.is_number() || v.is_boolean()) {
    out.push_back(v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>());
    return true;
  }
  if (!v.is_array()) return false;
  for (const auto& e : v)
    if (!collect_numbers(e, out)) return false;
  return true;
}

}  // namespace

// ---------------------------------------------------------------------------------------------- groups

const Batch& BatchGroups::at(const std::string& key) const {
  for (const auto& [k, b] : entries)
    if (k == key) return b;
  throw Error(fmt::format("no group '{}' (groups: [{}])", key, fmt::join(keys_of(entries), ", ")));
}

bool BatchGroups::contains(const std::string& key) const {
  return std::any_of(entries.begin(), entries.end(), [&](const auto& e) { return e.first == key; });
}

// ---------------------------------------------------------------------------------------------- columns

Batch::Batch(int64_t size) : size_(size), sized_(true) {
  if (size < 0) throw Error(fmt::format("Batch: size must be >= 0, got {}", size));
}

void Batch::check_rows(const std::string& key, int64_t rows, const char* kind) {
  if (!sized_) {
    size_ = rows;
    sized_ = true;
    return;
  }
  if (rows != size_)
    throw Error(fmt::format("Batch: {} '{}' has {} rows but the batch has {}", kind, key, rows, size_));
}

void Batch::throw_missing(const std::string& key, const char* kind) const {
  throw Error(fmt::format("Batch has no {} '{}' (tensors: [{}]; non-tensor columns: [{}])", kind, key,
                          fmt::join(tensor_keys(), ", "), fmt::join(column_keys(), ", ")));
}

std::vector<std::pair<std::string, at::Tensor>>::const_iterator Batch::find_tensor(const std::string& key) const {
  return std::find_if(tensors_.begin(), tensors_.end(), [&](const auto& e) { return e.first == key; });
}

std::vector<std::pair<std::string, NonTensorColumn>>::const_iterator Batch::find_column(
    const std::string& key) const {
  return std::find_if(columns_.begin(), columns_.end(), [&](const auto& e) { return e.first == key; });
}

void Batch::set_tensor(const std::string& key, at::Tensor value) {
  if (!value.defined()) throw Error(fmt::format("Batch: tensor '{}' is undefined", key));
  if (value.dim() == 0)
    throw Error(fmt::format("Batch: tensor '{}' is 0-dim; a batch tensor needs a leading batch dimension", key));
  auto it = find_tensor(key);
  // The size stays fixed once set, even when replacing the only column, as a TensorDict's batch_size does.
  check_rows(key, value.size(0), "tensor");
  if (has_column(key)) erase_column(key);
  if (it != tensors_.end()) {
    tensors_[it - tensors_.begin()].second = std::move(value);
  } else {
    tensors_.emplace_back(key, std::move(value));
  }
}

const at::Tensor& Batch::tensor(const std::string& key) const {
  auto it = find_tensor(key);
  if (it == tensors_.end()) throw_missing(key, "tensor");
  return it->second;
}

bool Batch::has_tensor(const std::string& key) const { return find_tensor(key) != tensors_.end(); }

void Batch::erase_tensor(const std::string& key) {
  auto it = find_tensor(key);
  if (it == tensors_.end()) throw_missing(key, "tensor");
  tensors_.erase(it);
}

std::vector<std::string> Batch::tensor_keys() const { return keys_of(tensors_); }

void Batch::set_column(const std::string& key, NonTensorColumn cells) {
  check_rows(key, static_cast<int64_t>(cells.size()), "non-tensor column");
  if (has_tensor(key)) erase_tensor(key);
  auto it = find_column(key);
  if (it != columns_.end()) {
    columns_[it - columns_.begin()].second = std::move(cells);
  } else {
    columns_.emplace_back(key, std::move(cells));
  }
}

const NonTensorColumn& Batch::column(const std::string& key) const {
  auto it = find_column(key);
  if (it == columns_.end()) throw_missing(key, "non-tensor column");
  return it->second;
}

bool Batch::has_column(const std::string& key) const { return find_column(key) != columns_.end(); }

void Batch::erase_column(const std::string& key) {
  auto it = find_column(key);
  if (it == columns_.end()) throw_missing(key, "non-tensor column");
  columns_.erase(it);
}

std::vector<std::string> Batch::column_keys() const { return keys_of(columns_); }

const Cell& Batch::cell(const std::string& key, int64_t row) const {
  const auto& col = column(key);
  return col[checked_row(row, size_, key)];
}

void Batch::set_cell(const std::string& key, int64_t row, Cell value) {
  auto it = find_column(key);
  if (it == columns_.end()) throw_missing(key, "non-tensor column");
  columns_[it - columns_.begin()].second[checked_row(row, size_, key)] = std::move(value);
}

std::string Batch::get_string(const std::string& key, int64_t row) const {
  const Cell& c = cell(key, row);
  if (!c.is_string())
    throw Error(fmt::format("Batch: column '{}' row {} holds a {}, not a string", key, row, json_type_name(c)));
  return c.get<std::string>();
}

int64_t Batch::get_int(const std::string& key, int64_t row) const {
  const Cell& c = cell(key, row);
  if (!c.is_number_integer())
    throw Error(fmt::format("Batch: column '{}' row {} holds a {}, not an integer", key, row, json_type_name(c)));
  return c.get<int64_t>();
}

double Batch::get_double(const std::string& key, int64_t row) const {
  const Cell& c = cell(key, row);
  if (!c.is_number())
    throw Error(fmt::format("Batch: column '{}' row {} holds a {}, not a number", key, row, json_type_name(c)));
  return c.get<double>();
}

void Batch::erase(const std::string& key) {
  if (has_tensor(key)) {
    erase_tensor(key);
  } else if (has_column(key)) {
    erase_column(key);
  } else {
    throw_missing(key, "column");
  }
}

void Batch::rename(const std::string& old_key, const std::string& new_key) {
  if (old_key == new_key) {
    if (!has(old_key)) throw_missing(old_key, "column");
    return;
  }
  if (has(new_key)) throw Error(fmt::format("Batch: cannot rename '{}' to '{}': '{}' exists", old_key, new_key, new_key));
  for (auto& [k, v] : tensors_)
    if (k == old_key) {
      k = new_key;
      return;
    }
  for (auto& [k, v] : columns_)
    if (k == old_key) {
      k = new_key;
      return;
    }
  throw_missing(old_key, "column");
}

// ---------------------------------------------------------------------------------------------- row ops

Batch Batch::select(const std::vector<std::string>& tensor_keys, const std::vector<std::string>& column_keys) const {
  Batch out(size_);
  for (const auto& k : tensor_keys) {
    if (out.has(k)) throw Error(fmt::format("Batch::select: key '{}' is named twice", k));
    out.tensors_.emplace_back(k, tensor(k));
  }
  for (const auto& k : column_keys) {
    if (out.has(k)) throw Error(fmt::format("Batch::select: key '{}' is named twice", k));
    out.columns_.emplace_back(k, column(k));
  }
  out.meta = meta;
  return out;
}

Batch Batch::slice(int64_t begin, int64_t end) const {
  if (begin < 0 || end < begin || end > size_)
    throw Error(fmt::format("Batch::slice: rows [{}, {}) are outside a batch of size {}", begin, end, size_));
  Batch out(end - begin);
  for (const auto& [k, t] : tensors_) out.tensors_.emplace_back(k, t.narrow(0, begin, end - begin));
  for (const auto& [k, c] : columns_) out.columns_.emplace_back(k, NonTensorColumn(c.begin() + begin, c.begin() + end));
  out.meta = meta;
  return out;
}

Batch Batch::take(const std::vector<int64_t>& index) const {
  for (int64_t i : index)
    if (i < 0 || i >= size_)
      throw Error(fmt::format("Batch::take: row index {} is out of range (batch size {})", i, size_));
  Batch out(static_cast<int64_t>(index.size()));
  if (!tensors_.empty()) {
    at::Tensor cpu_index = at::tensor(at::ArrayRef<int64_t>(index), at::kLong);
    for (const auto& [k, t] : tensors_) {
      at::Tensor idx = t.device() == cpu_index.device() ? cpu_index : cpu_index.to(t.device());
      out.tensors_.emplace_back(k, t.index_select(0, idx));
    }
  }
  for (const auto& [k, c] : columns_) {
    NonTensorColumn picked;
    picked.reserve(index.size());
    for (int64_t i : index) picked.push_back(c[i]);
    out.columns_.emplace_back(k, std::move(picked));
  }
  out.meta = meta;
  return out;
}

Batch Batch::take(const at::Tensor& index) const {
  at::Tensor idx = index.dim() == 0 ? index.reshape({1}) : index;
  if (idx.dim() != 1) throw Error(fmt::format("Batch::take: index must be 1-D, got shape {}", shape_string(idx)));
  idx = idx.to(at::kCPU);
  if (idx.scalar_type() == at::kBool) {
    if (idx.size(0) != size_)
      throw Error(fmt::format("Batch::take: bool mask has {} entries but the batch has {}", idx.size(0), size_));
    idx = idx.nonzero().reshape({-1});
  } else if (!at::isIntegralType(idx.scalar_type(), /*includeBool=*/false)) {
    throw Error(fmt::format("Batch::take: index tensor must be integer or bool, got {}", c10::toString(idx.scalar_type())));
  }
  idx = idx.to(at::kLong).contiguous();
  const int64_t* p = idx.data_ptr<int64_t>();
  return take(std::vector<int64_t>(p, p + idx.numel()));
}

std::vector<Batch> Batch::chunk(int64_t n) const {
  if (n <= 0) throw Error(fmt::format("Batch::chunk: number of chunks must be > 0, got {}", n));
  if (size_ > 0 && size_ < n)
    throw Error(fmt::format("Batch::chunk: cannot split {} rows into {} chunks (batch_size {} < chunks {})", size_, n,
                            size_, n));
  std::vector<Batch> parts;
  parts.reserve(n);
  const int64_t base = size_ / n, extra = size_ % n;
  int64_t begin = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = base + (i < extra ? 1 : 0);
    Batch part = slice(begin, begin + len);
    for (auto& [k, t] : part.tensors_) t = t.clone();
    parts.push_back(std::move(part));
    begin += len;
  }
  return parts;
}

Batch Batch::concat(const std::vector<Batch>& parts, const std::set<std::string>& global_keys) {
  if (parts.empty()) throw Error("Batch::concat: no batches to concatenate");
  // Parts without columns carry no layout (e.g. a default Batch from a rank with nothing to return).
  const Batch* layout = nullptr;
  int64_t layout_index = 0;
  for (size_t i = 0; i < parts.size(); ++i)
    if (!parts[i].tensors_.empty() || !parts[i].columns_.empty()) {
      layout = &parts[i];
      layout_index = static_cast<int64_t>(i);
      break;
    }

  int64_t total = 0;
  for (const auto& p : parts) total += p.size_;
  Batch out(total);

  if (layout != nullptr) {
    auto sorted = [](std::vector<std::string> v) {
      std::sort(v.begin(), v.end());
      return v;
    };
    const auto want_t = sorted(layout->tensor_keys()), want_c = sorted(layout->column_keys());
    std::vector<const Batch*> used;
    for (size_t i = 0; i < parts.size(); ++i) {
      const Batch& p = parts[i];
      if (p.tensors_.empty() && p.columns_.empty()) {
        if (p.size_ != 0)
          throw Error(fmt::format("Batch::concat: part {} has {} rows but no columns while part {} has columns", i,
                                  p.size_, layout_index));
        continue;
      }
      const auto got_t = sorted(p.tensor_keys()), got_c = sorted(p.column_keys());
      if (got_t != want_t || got_c != want_c)
        throw Error(fmt::format(
            "Batch::concat: part {} has tensors [{}] and non-tensor columns [{}] but part {} has [{}] and [{}]", i,
            fmt::join(got_t, ", "), fmt::join(got_c, ", "), layout_index, fmt::join(want_t, ", "),
            fmt::join(want_c, ", ")));
      used.push_back(&p);
    }
    for (const auto& [key, first] : layout->tensors_) {
      std::vector<at::Tensor> pieces;
      pieces.reserve(used.size());
      for (const Batch* p : used) pieces.push_back(p->tensor(key));
      try {
        out.tensors_.emplace_back(key, at::cat(pieces, 0));
      } catch (const c10::Error& e) {
        std::vector<std::string> shapes;
        for (const auto& t : pieces) shapes.push_back(fmt::format("{} {}", shape_string(t), c10::toString(t.scalar_type())));
        throw Error(fmt::format("Batch::concat: tensor '{}' cannot be concatenated, parts have shapes {}", key,
                                fmt::join(shapes, ", ")));
      }
    }
    for (const auto& [key, first] : layout->columns_) {
      NonTensorColumn cells;
      cells.reserve(total);
      for (const Batch* p : used) {
        const auto& c = p->column(key);
        cells.insert(cells.end(), c.begin(), c.end());
      }
      out.columns_.emplace_back(key, std::move(cells));
    }
  }

  // Meta: the first part's values, then the global keys merged across parts. Unlike ROLL, a single part goes
  // through the same merge so the merged keys always have the same shape (lists) whatever the DP size.
  out.meta = parts[0].meta.is_object() ? parts[0].meta : nlohmann::json::object();
  for (const auto& key : global_keys) {
    std::vector<nlohmann::json> values;
    const nlohmann::json* first = nullptr;
    for (const auto& p : parts) {
      auto it = p.meta.is_object() ? p.meta.find(key) : p.meta.end();
      values.push_back(it != p.meta.end() ? *it : nlohmann::json());
      if (first == nullptr && !values.back().is_null()) first = &*it;
    }
    if (first == nullptr) continue;
    if (!first->is_object()) {
      out.meta[key] = nlohmann::json(values);
      continue;
    }
    // Sub-key -> values of the parts that have it (missing sub-keys are skipped, not filled).
    nlohmann::json merged = nlohmann::json::object();
    std::unordered_map<std::string, std::vector<const nlohmann::json*>> by_sub;
    std::vector<std::string> order;
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i].is_null()) continue;
      if (!values[i].is_object())
        throw Error(fmt::format("Batch::concat: meta '{}' is a dict in one part but a {} in part {}", key,
                                values[i].type_name(), i));
      for (const auto& [sub, v] : values[i].items()) {
        auto [it, fresh] = by_sub.try_emplace(sub);
        if (fresh) order.push_back(sub);
        it->second.push_back(&v);
      }
    }
    for (const auto& sub : order) {
      const auto& vs = by_sub[sub];
      // Arrays are concatenated (np.concatenate); anything else becomes a list of the values.
      const bool all_arrays = std::all_of(vs.begin(), vs.end(), [](const auto* v) { return v->is_array(); });
      nlohmann::json list = nlohmann::json::array();
      for (const auto* v : vs) {
        if (all_arrays) {
          for (const auto& e : *v) list.push_back(e);
        } else {
          list.push_back(*v);
        }
      }
      merged[sub] = std::move(list);
    }
    out.meta[key] = std::move(merged);
  }
  return out;
}

BatchGroups Batch::group_by(const std::vector<std::string>& keys) const {
  if (keys.empty()) throw Error("Batch::group_by: at least one grouping key is needed");
  std::vector<std::string> row_keys(size_);
  for (size_t ki = 0; ki < keys.size(); ++ki) {
    const std::string& key = keys[ki];
    if (has_tensor(key)) {
      at::Tensor t = tensor(key).to(at::kCPU).contiguous();
      for (int64_t r = 0; r < size_; ++r)
        if (ki > 0) row_keys[r] += '|';
      append_column_strings(t, row_keys);
    } else if (has_column(key)) {
      const auto& c = column(key);
      for (int64_t r = 0; r < size_; ++r) {
        if (ki > 0) row_keys[r] += '|';
        row_keys[r] += cell_string(c[r]);
      }
    } else {
      throw Error(fmt::format("Grouping key '{}' not found in tensor or non-tensor data (tensors: [{}]; non-tensor "
                              "columns: [{}])",
                              key, fmt::join(tensor_keys(), ", "), fmt::join(column_keys(), ", ")));
    }
  }
  std::vector<std::pair<std::string, std::vector<int64_t>>> groups;
  std::unordered_map<std::string, size_t> where;
  for (int64_t r = 0; r < size_; ++r) {
    auto [it, fresh] = where.try_emplace(row_keys[r], groups.size());
    if (fresh) groups.emplace_back(row_keys[r], std::vector<int64_t>{});
    groups[it->second].second.push_back(r);
  }
  BatchGroups out;
  out.entries.reserve(groups.size());
  for (auto& [k, rows] : groups) out.entries.emplace_back(k, take(rows));
  return out;
}

Batch Batch::repeat(int64_t n, bool interleave) const {
  if (n < 0) throw Error(fmt::format("Batch::repeat: repeat count must be >= 0, got {}", n));
  std::vector<int64_t> index;
  index.reserve(size_ * n);
  if (interleave) {
    for (int64_t r = 0; r < size_; ++r)
      for (int64_t k = 0; k < n; ++k) index.push_back(r);
  } else {
    for (int64_t k = 0; k < n; ++k)
      for (int64_t r = 0; r < size_; ++r) index.push_back(r);
  }
  return take(index);
}

int64_t Batch::pad_to_divisor(int64_t divisor) {
  if (divisor <= 0) throw Error(fmt::format("Batch::pad_to_divisor: divisor must be > 0, got {}", divisor));
  if (size_ % divisor == 0) return 0;
  const int64_t pad = divisor - size_ % divisor;
  std::vector<int64_t> index(size_ + pad);
  // Rows 0..B-1, then leading rows again (row j of the padding is row j % B, as ROLL's repeated data[:take]).
  for (int64_t i = 0; i < size_ + pad; ++i) index[i] = i % size_;
  *this = take(index);
  return pad;
}

void Batch::unpad(int64_t pad) {
  if (pad < 0 || pad > size_)
    throw Error(fmt::format("Batch::unpad: cannot remove {} padding rows from a batch of size {}", pad, size_));
  if (pad == 0) return;
  *this = slice(0, size_ - pad);
}

void Batch::union_with(const Batch& other) {
  const bool other_has_columns = !other.tensors_.empty() || !other.columns_.empty();
  if (other_has_columns && sized_ && size_ != other.size_)
    throw Error(fmt::format("Batch::union_with: batch sizes differ ({} vs {})", size_, other.size_));
  for (const auto& [k, t] : other.tensors_) {
    if (has_column(k)) throw Error(fmt::format("Batch::union_with: '{}' is a tensor in one batch only", k));
    if (has_tensor(k)) {
      const at::Tensor& mine = tensor(k);
      if (mine.scalar_type() != t.scalar_type() || !mine.sizes().equals(t.sizes()) || !at::equal(mine, t.to(mine.device())))
        throw Error(fmt::format("Batch::union_with: tensor '{}' differs between the two batches", k));
      continue;
    }
    set_tensor(k, t);
  }
  for (const auto& [k, c] : other.columns_) {
    if (has_tensor(k)) throw Error(fmt::format("Batch::union_with: '{}' is a tensor in one batch only", k));
    if (has_column(k)) {
      if (column(k) != c) throw Error(fmt::format("Batch::union_with: non-tensor column '{}' differs", k));
      continue;
    }
    set_column(k, c);
  }
  if (!other.meta.is_object()) return;
  if (!meta.is_object()) meta = nlohmann::json::object();
  for (const auto& [k, v] : other.meta.items()) {
    auto it = meta.find(k);
    if (it != meta.end() && *it != v)
      throw Error(fmt::format("Batch::union_with: meta '{}' differs ({} vs {})", k, it->dump(), v.dump()));
    meta[k] = v;
  }
}

Batch Batch::clone() const {
  Batch out = *this;
  for (auto& [k, t] : out.tensors_) t = t.clone();
  return out;
}

Batch Batch::to(at::Device device) const {
  Batch out = *this;
  for (auto& [k, t] : out.tensors_) t = t.to(device);
  return out;
}

void Batch::cast_int64_to_int32() {
  for (auto& [k, t] : tensors_)
    if (t.scalar_type() == at::kLong) t = t.to(at::kInt);
}

nlohmann::json reduce_metrics(const nlohmann::json& metrics) {
  if (!metrics.is_object())
    throw Error(fmt::format("reduce_metrics: metrics must be a JSON object, got a {}", metrics.type_name()));
  nlohmann::json out = nlohmann::json::object();
  std::vector<double> values;
  for (const auto& [key, v] : metrics.items()) {
    values.clear();
    if (!collect_numbers(v, values))
      throw Error(fmt::format("reduce_metrics: metric '{}' holds a non-numeric value: {}", key, v.dump()));
    double sum = 0;
    for (double x : values) sum += x;
    out[key] = values.empty() ? std::numeric_limits<double>::quiet_NaN() : sum / static_cast<double>(values.size());
  }
  return out;
}

}  // namespace roll
