#include "roll/model/bpe.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <queue>
#include <shared_mutex>

#include "roll/model/unicode_utils.h"

namespace roll::model {

TokenIndex::TokenIndex(const std::vector<std::string>* tokens) : tokens_(tokens) {
  size_t cap = 16;
  while (cap < tokens->size() * 2) cap <<= 1;
  slots_.assign(cap, -1);
  mask_ = cap - 1;
  for (size_t id = 0; id < tokens->size(); ++id) {
    const std::string& t = (*tokens)[id];
    if (t.empty()) continue;
    size_t i = std::hash<std::string_view>{}(t) & mask_;
    while (slots_[i] >= 0 && (*tokens)[slots_[i]] != t) i = (i + 1) & mask_;
    if (slots_[i] < 0) slots_[i] = static_cast<TokenId>(id);  // a repeated string keeps its first id
  }
}

std::optional<TokenId> TokenIndex::find(std::string_view token) const {
  if (slots_.empty() || token.empty()) return std::nullopt;
  for (size_t i = std::hash<std::string_view>{}(token) & mask_;; i = (i + 1) & mask_) {
    const TokenId id = slots_[i];
    if (id < 0) return std::nullopt;
    if ((*tokens_)[id] == token) return id;
  }
}

// (left id, right id) -> (rank, merged id): open addressing, linear probing. ~150k merges of
// the Qwen vocabulary fit a 512k-slot table (6 MB); lookups are the inner loop of encoding.
struct BpeModel::PairTable {
  struct Slot {
    uint64_t key = kEmpty;
    uint32_t rank = 0;
    TokenId merged = -1;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  std::vector<Slot> slots;
  uint64_t mask = 0;

  static uint64_t key_of(TokenId a, TokenId b) {
    return (uint64_t{static_cast<uint32_t>(a)} << 32) | static_cast<uint32_t>(b);
  }
  static uint64_t hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
  }
  explicit PairTable(const std::vector<BpeMerge>& merges) {
    size_t cap = 16;
    while (cap < merges.size() * 2 + 16) cap <<= 1;
    slots.resize(cap);
    mask = cap - 1;
    for (size_t r = 0; r < merges.size(); ++r) {
      const uint64_t k = key_of(merges[r].left, merges[r].right);
      uint64_t i = hash(k) & mask;
      while (slots[i].key != kEmpty && slots[i].key != k) i = (i + 1) & mask;
      // A repeated pair keeps its last rank, as HF's HashMap collect does.
      slots[i] = {k, static_cast<uint32_t>(r), merges[r].merged};
    }
  }
  const Slot* find(TokenId a, TokenId b) const {
    const uint64_t k = key_of(a, b);
    uint64_t i = hash(k) & mask;
    while (true) {
      const Slot& s = slots[i];
      if (s.key == k) return &s;
      if (s.key == kEmpty) return nullptr;
      i = (i + 1) & mask;
    }
  }
};

// Per-word cache: 16 shards, each an open-addressing table over an arena holding the word's
// bytes followed by its ids, behind a reader/writer lock. Flat storage keeps a hit to about two
// cache lines (slot, arena), which matters: most pre-tokens of real text are cache hits.
struct BpeModel::Cache {
  struct Slot {
    uint64_t hash = 0;  // 0: empty (stored hashes have the low bit set)
    uint32_t offset = 0;
    uint16_t word_len = 0;
    uint16_t n_ids = 0;
  };
  struct Shard {
    mutable std::shared_mutex mu;
    std::vector<Slot> slots;
    std::string arena;
    size_t entries = 0;
  };
  static constexpr size_t kShards = 16;
  std::array<Shard, kShards> shards;
  std::atomic<size_t> entries{0};
  size_t per_shard;

  explicit Cache(size_t capacity) : per_shard(std::max<size_t>(1, capacity / kShards)) {
    size_t n = 16;
    while (n < per_shard * 2) n <<= 1;
    for (Shard& s : shards) s.slots.resize(n);
  }
  static uint64_t hash_of(std::string_view w) { return std::hash<std::string_view>{}(w) | 1; }
  static Shard& shard_of(std::array<Shard, kShards>& sh, uint64_t h) { return sh[(h * 0x9E3779B97F4A7C15ULL) >> 60]; }

  bool get(std::string_view w, std::vector<TokenId>& out) {
    const uint64_t h = hash_of(w);
    Shard& s = shard_of(shards, h);
    std::shared_lock lock(s.mu);
    const size_t mask = s.slots.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot& slot = s.slots[i];
      if (slot.hash == 0) return false;
      if (slot.hash == h && slot.word_len == w.size() && std::memcmp(s.arena.data() + slot.offset, w.data(), w.size()) == 0) {
        const size_t at = out.size();
        out.resize(at + slot.n_ids);
        std::memcpy(out.data() + at, s.arena.data() + slot.offset + slot.word_len, slot.n_ids * sizeof(TokenId));
        return true;
      }
    }
  }
  void put(std::string_view w, const TokenId* ids, size_t n) {
    if (w.size() > UINT16_MAX || n > UINT16_MAX) return;
    const uint64_t h = hash_of(w);
    Shard& s = shard_of(shards, h);
    std::unique_lock lock(s.mu);
    // When full, new words are not cached (as HF); the arena stays within 32-bit offsets.
    if (s.entries >= per_shard || s.arena.size() + w.size() + n * sizeof(TokenId) > UINT32_MAX) return;
    const size_t mask = s.slots.size() - 1;
    size_t i = h & mask;
    for (; s.slots[i].hash != 0; i = (i + 1) & mask) {
      const Slot& slot = s.slots[i];
      if (slot.hash == h && slot.word_len == w.size() && std::memcmp(s.arena.data() + slot.offset, w.data(), w.size()) == 0)
        return;  // another thread cached it first
    }
    Slot& slot = s.slots[i];
    slot.offset = static_cast<uint32_t>(s.arena.size());
    slot.word_len = static_cast<uint16_t>(w.size());
    slot.n_ids = static_cast<uint16_t>(n);
    s.arena.append(w);
    s.arena.append(reinterpret_cast<const char*>(ids), n * sizeof(TokenId));
    slot.hash = h;
    ++s.entries;
    entries.fetch_add(1, std::memory_order_relaxed);
  }
  void clear() {
    for (Shard& s : shards) {
      std::unique_lock lock(s.mu);
      std::fill(s.slots.begin(), s.slots.end(), Slot{});
      s.arena.clear();
      s.arena.shrink_to_fit();
      s.entries = 0;
    }
    entries = 0;
  }
};

BpeModel::BpeModel(const std::array<TokenId, 256>& byte_ids, const std::vector<BpeMerge>& merges, Options options,
                   const TokenIndex* vocab)
    : byte_ids_(byte_ids),
      pairs_(std::make_unique<PairTable>(merges)),
      cache_(std::make_unique<Cache>(options.cache_capacity)),
      options_(options),
      vocab_(vocab) {}

BpeModel::~BpeModel() = default;

void BpeModel::clear_cache() const { cache_->clear(); }
size_t BpeModel::cache_entries() const { return cache_->entries.load(); }

void BpeModel::encode(std::string_view word, std::vector<TokenId>& out) const {
  if (word.empty()) return;
  if (word.size() == 1) {
    const TokenId id = byte_ids_[static_cast<unsigned char>(word[0])];
    if (id >= 0) out.push_back(id);
    return;
  }
  if (options_.ignore_merges && vocab_) {
    std::string mapped;
    for (unsigned char b : word) mapped += unicode::byte_to_unicode()[b];
    if (const auto id = vocab_->find(mapped)) {
      out.push_back(*id);
      return;
    }
  }
  const bool cacheable = word.size() <= options_.max_cached_word_bytes;
  if (cacheable && cache_->get(word, out)) return;
  const size_t before = out.size();
  merge_word(word, out);
  if (cacheable) cache_->put(word, out.data() + before, out.size() - before);
}

void BpeModel::merge_word(std::string_view word, std::vector<TokenId>& out) const {
  constexpr uint32_t kNone = ~uint32_t{0};
  const size_t n0 = word.size();

  if (n0 <= 64) {
    // Short words: ids and the rank of each adjacent pair in small arrays; each round merges
    // the lowest-ranked pair (leftmost on ties) and refreshes its two neighbours.
    TokenId ids[64];
    uint32_t ranks[64];
    TokenId merged[64];
    size_t n = 0;
    for (unsigned char b : word) {
      const TokenId id = byte_ids_[b];
      if (id >= 0) ids[n++] = id;
    }
    auto rank_at = [&](size_t i) {
      const PairTable::Slot* s = pairs_->find(ids[i], ids[i + 1]);
      ranks[i] = s ? s->rank : kNone;
      merged[i] = s ? s->merged : -1;
    };
    for (size_t i = 0; i + 1 < n; ++i) rank_at(i);
    while (n > 1) {
      size_t best = 0;
      for (size_t i = 1; i + 1 < n; ++i)
        if (ranks[i] < ranks[best]) best = i;
      if (ranks[best] == kNone) break;
      ids[best] = merged[best];
      for (size_t i = best + 1; i + 1 < n; ++i) ids[i] = ids[i + 1];
      for (size_t i = best + 1; i + 2 < n; ++i) {
        ranks[i] = ranks[i + 1];
        merged[i] = merged[i + 1];
      }
      --n;
      if (best > 0) rank_at(best - 1);
      if (best + 1 < n) rank_at(best);
    }
    out.insert(out.end(), ids, ids + n);
    return;
  }

  // Long words (runs of CJK letters or blanks): linked symbols and a heap of candidate merges,
  // O(n log n); stale candidates are skipped when popped (HF's BPE word merge).
  struct Sym {
    TokenId id;
    int prev, next;
  };
  struct Cand {
    uint32_t rank;
    int pos;
    TokenId merged;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::vector<Sym> syms;
  syms.reserve(n0);
  for (unsigned char b : word) {
    const TokenId id = byte_ids_[b];
    if (id < 0) continue;
    const int i = static_cast<int>(syms.size());
    syms.push_back({id, i - 1, i + 1});
  }
  if (syms.empty()) return;
  syms.back().next = -1;
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto push = [&](int pos) {
    const int nx = syms[pos].next;
    if (nx < 0) return;
    if (const PairTable::Slot* s = pairs_->find(syms[pos].id, syms[nx].id)) heap.push({s->rank, pos, s->merged});
  };
  for (int i = 0; i + 1 < static_cast<int>(syms.size()); ++i) push(i);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& s = syms[c.pos];
    if (s.id < 0 || s.next < 0) continue;
    const PairTable::Slot* cur = pairs_->find(s.id, syms[s.next].id);
    if (!cur || cur->rank != c.rank || cur->merged != c.merged) continue;
    Sym& right = syms[s.next];
    s.id = c.merged;
    s.next = right.next;
    if (right.next >= 0) syms[right.next].prev = c.pos;
    right.id = -1;
    if (s.prev >= 0) push(s.prev);
    push(c.pos);
  }
  for (int i = 0; i >= 0; i = syms[i].next) out.push_back(syms[i].id);
}

}  // namespace roll::model
