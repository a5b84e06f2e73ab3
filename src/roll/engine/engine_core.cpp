#include "roll/engine/engine_core.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <chrono>
#include <deque>
#include <map>
#include <unordered_map>

#include "roll/core/error.h"
#include "roll/core/process_memory.h"
#include "roll/engine/model_runner.h"
#include "roll/engine/paged_attention.h"
#include "roll/engine/paged_kv_cache.h"
#include "roll/engine/sampler.h"
#include "roll/engine/scheduler.h"
#include "roll/engine/stop_checker.h"
#include "roll/model/transformer.h"

namespace roll::engine {

namespace {

int64_t weight_bytes(const model::Transformer& m) {
  int64_t n = 0;
  for (const auto& [name, t] : m.named_parameters()) n += t.numel() * static_cast<int64_t>(t.element_size());
  return n;
}

}  // namespace

struct EngineCore::Impl {
  struct RequestState {
    GenerationRequest request;
    int64_t max_new_tokens = 0;
    uint64_t seed = 0;
    std::vector<std::unique_ptr<Sequence>> seqs;  // sample i at index i once it exists
    std::vector<std::optional<SampleOutput>> done;
    int64_t num_done = 0;
    int64_t cached_prompt_tokens = 0;
  };

  std::shared_ptr<model::Transformer> model;
  EngineConfig config;
  ModelRunner runner;
  int64_t max_model_len = 0;
  std::unique_ptr<PagedKvCache> cache;
  std::unique_ptr<KvCacheManager> kv;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<PagedAttention> attention;
  std::map<int64_t, RequestState> requests;  // by arrival number
  std::unordered_map<std::string, int64_t> ids;
  std::deque<RequestOutput> finished;
  int64_t next_request = 0;
  SeqId next_seq = 0;
  bool asleep = false;
  int64_t weight_version = 0;
  bool weights_shared = false;  // the weights are another's memory (share_weights): never written

  // New weights by `fill` over the model's own tensors; the K/V computed with the old ones goes.
  void replace_weights(const std::function<void(const model::NamedTensors& own)>& fill) {
    {
      at::NoGradGuard no_grad;
      fill(model->named_parameters());
    }
    scheduler->preempt_all();
    kv->reset_prefix_cache();
  }

  // The engine runs base products only: adapters a model was loaded with are folded in first.
  static std::shared_ptr<model::Transformer> merged(std::shared_ptr<model::Transformer> m) {
    if (m && m->lora()) m->merge_adapters();
    return m;
  }

  Impl(std::shared_ptr<model::Transformer> m, EngineConfig c)
      : model(merged(std::move(m))), config(std::move(c)), runner(model) {
    if (config.num_threads > 0) at::set_num_threads(config.num_threads);
    const auto& mc = model->config();
    if (config.block_size <= 0) throw ConfigError("block_size", "block_size must be positive");
    if (config.max_num_seqs <= 0) throw ConfigError("max_num_seqs", "max_num_seqs must be positive");
    if (config.max_num_batched_tokens <= 0)
      throw ConfigError("max_num_batched_tokens", "max_num_batched_tokens must be positive");
    max_model_len = config.max_model_len > 0 ? config.max_model_len : mc.max_position_embeddings;
    if (max_model_len > mc.max_position_embeddings)
      throw ConfigError("max_model_len", fmt::format("max_model_len {} exceeds the model's max_position_embeddings {}",
                                                     max_model_len, mc.max_position_embeddings));
    const at::ScalarType dtype = model->dtype() == at::kBFloat16 ? at::kBFloat16 : at::kFloat;
    KvCacheShape shape{mc.num_hidden_layers, 0, config.block_size, mc.num_key_value_heads, mc.head_dim};
    const int64_t per_block = PagedKvCache::bytes_per_block(shape, dtype);
    const int64_t blocks_per_seq = (max_model_len + config.block_size - 1) / config.block_size;
    int64_t blocks = config.num_blocks;
    if (blocks <= 0) {
      const int64_t budget = config.memory_budget_bytes > 0 ? config.memory_budget_bytes : core::physical_memory_bytes();
      const int64_t avail = static_cast<int64_t>(static_cast<double>(budget) * config.gpu_memory_utilization) -
                            weight_bytes(*model);
      blocks = std::max<int64_t>(0, avail / per_block);
      // More than every sequence at full length can never be used; on CPU it would only
      // reserve address space.
      blocks = std::min(blocks, config.max_num_seqs * blocks_per_seq);
    }
    if (blocks * config.block_size < max_model_len)
      throw ConfigError("gpu_memory_utilization",
                        fmt::format("the KV cache gets {} blocks of {} tokens ({} MiB each), too few for one "
                                    "sequence of max_model_len {}: raise gpu_memory_utilization or the memory "
                                    "budget, or lower max_model_len",
                                    blocks, config.block_size, per_block >> 20, max_model_len));
    shape.num_blocks = blocks;
    cache = std::make_unique<PagedKvCache>(shape, dtype);
    kv = std::make_unique<KvCacheManager>(static_cast<int32_t>(blocks), config.block_size,
                                          config.enable_prefix_caching);
    scheduler = std::make_unique<Scheduler>(
        SchedulerConfig{config.max_num_batched_tokens, config.max_num_seqs}, *kv);
    attention = std::make_unique<PagedAttention>(*cache, mc.num_attention_heads);
  }

  void validate(const GenerationRequest& r) const {
    const std::string who = fmt::format("request '{}'", r.request_id);
    if (ids.count(r.request_id)) throw Error(fmt::format("{}: a request with this id is already running", who));
    const int64_t P = static_cast<int64_t>(r.prompt_token_ids.size());
    if (P == 0) throw Error(fmt::format("{}: the prompt is empty", who));
    if (P >= max_model_len)
      throw Error(fmt::format("{}: the prompt has {} tokens, max_model_len is {} (at least one token must be left "
                              "to generate)",
                              who, P, max_model_len));
    const int64_t V = model->config().vocab_size;
    for (int64_t i = 0; i < P; ++i)
      if (r.prompt_token_ids[i] < 0 || r.prompt_token_ids[i] >= V)
        throw Error(fmt::format("{}: prompt token {} at position {} is outside the vocabulary [0, {})", who,
                                r.prompt_token_ids[i], i, V));
    try {
      roll::validate(r.params);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", who, e.what()));
    }
    if (!r.params.stop.empty() && !config.detokenize)
      throw Error(fmt::format("{}: stop strings need an engine with a detokenizer", who));
  }

  void add(GenerationRequest r) {
    if (asleep) throw Error("the engine is asleep (KV cache released): call wake() before adding requests");
    validate(r);
    const int64_t key = next_request++;
    RequestState st;
    st.max_new_tokens =
        std::min(r.params.max_new_tokens, max_model_len - static_cast<int64_t>(r.prompt_token_ids.size()));
    st.seed = r.params.seed ? *r.params.seed : config.seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(key);
    st.done.resize(r.params.n);
    auto seq = std::make_unique<Sequence>();
    seq->id = next_seq++;
    seq->request = key;
    seq->fork_width = r.params.n;
    seq->tokens = r.prompt_token_ids;
    seq->prompt_len = static_cast<int64_t>(r.prompt_token_ids.size());
    st.seqs.push_back(std::move(seq));
    st.request = std::move(r);
    ids[st.request.request_id] = key;
    Sequence* first = st.seqs[0].get();
    requests.emplace(key, std::move(st));
    scheduler->add(first);
  }

  SampleOutput sample_output(const Sequence& s, const RequestState& st, FinishReason reason,
                             const std::string& stop_string) const {
    SampleOutput o;
    o.token_ids.assign(s.tokens.begin() + s.prompt_len, s.tokens.end());
    o.logprobs = s.logprobs;
    o.weight_versions = s.weight_versions;
    o.finish_reason = reason;
    o.stop_reason = stop_string;
    o.text = output_text(s, st.request.params, stop_string, config.detokenize);
    return o;
  }

  RequestOutput request_output(RequestState& st) {
    RequestOutput out;
    out.request_id = st.request.request_id;
    out.prompt_token_ids = st.request.prompt_token_ids;
    out.cached_prompt_tokens = st.cached_prompt_tokens;
    for (auto& d : st.done) out.samples.push_back(d ? std::move(*d) : SampleOutput{});
    return out;
  }

  // Sample `index` of a request is done; the request finishes with its last sample.
  void finish_sample(RequestState& st, int64_t index, SampleOutput out) {
    st.done[index] = std::move(out);
    if (++st.num_done < static_cast<int64_t>(st.done.size())) return;
    const int64_t key = st.seqs[0]->request;
    finished.push_back(request_output(st));
    ids.erase(st.request.request_id);
    requests.erase(key);
  }

  // A new token for `seq`: record it, then finish the sample if it is done.
  void append(Sequence* seq, RequestState& st, const SampledToken& t) {
    seq->tokens.push_back(t.token);
    seq->logprobs.push_back(t.logprob);
    seq->weight_versions.push_back(weight_version);
    auto stop = check_stop(*seq, st.request.params, st.max_new_tokens, config.detokenize);
    if (!stop) return;
    scheduler->remove(seq);
    finish_sample(st, seq->sample_index, sample_output(*seq, st, stop->reason, stop->stop_string));
  }

  // What one forward reads: the scheduled chunks flattened into one token batch, the attention
  // metadata over their block tables, and the rows whose logits are sampled.
  struct StepInputs {
    at::Tensor tokens, positions;  // [N] each
    AttentionMetadata meta;
    std::vector<int64_t> sample_rows;             // row of each sampled chunk's last token
    std::vector<const ScheduledChunk*> sampling;  // chunks that reached their sequence's end
  };

  StepInputs prepare_inputs(const SchedulerOutput& so) const {
    StepInputs in;
    const int64_t bs = config.block_size, N = so.num_tokens, S = static_cast<int64_t>(so.chunks.size());
    in.tokens = at::empty({N}, at::kLong);
    in.positions = at::empty({N}, at::kLong);
    at::Tensor slots = at::empty({N}, at::kLong);
    int64_t* tp = in.tokens.data_ptr<int64_t>();
    int64_t* pp = in.positions.data_ptr<int64_t>();
    int64_t* sp = slots.data_ptr<int64_t>();
    AttentionMetadata& meta = in.meta;
    meta.q_start.resize(S), meta.q_len.resize(S), meta.ctx_len.resize(S);
    for (const auto& c : so.chunks)
      meta.max_blocks = std::max<int64_t>(meta.max_blocks, static_cast<int64_t>(kv->block_table(c.seq->id).size()));
    meta.block_tables.assign(S * meta.max_blocks, 0);
    int64_t n = 0;
    for (int64_t i = 0; i < S; ++i) {
      const ScheduledChunk& c = so.chunks[i];
      auto table = kv->block_table(c.seq->id);
      std::copy(table.begin(), table.end(), meta.block_tables.begin() + i * meta.max_blocks);
      meta.q_start[i] = n;
      meta.q_len[i] = c.num_tokens;
      meta.ctx_len[i] = c.start + c.num_tokens;
      for (int64_t p = c.start; p < c.start + c.num_tokens; ++p, ++n) {
        tp[n] = c.seq->tokens[p];
        pp[n] = p;
        sp[n] = static_cast<int64_t>(table[p / bs]) * bs + p % bs;
      }
      if (c.samples()) {
        in.sample_rows.push_back(n - 1);
        in.sampling.push_back(&c);
      }
    }
    meta.slots = slots;
    return in;
  }

  // The forward over the step's tokens: logits of the sampled rows only.
  at::Tensor execute_model(StepInputs& in, StepPhaseSeconds& phases) {
    at::NoGradGuard no_grad;
    attention->set_step(&in.meta);
    at::Tensor logits =
        runner.forward(in.tokens, in.positions, *attention, at::tensor(in.sample_rows, at::kLong), &phases);
    attention->set_step(nullptr);
    return logits;
  }

  // After the forward: the computed tokens enter the prefix cache, one token is drawn per sample,
  // a prompt that has just been computed forks its n samples, and finished samples leave.
  void update_from_output(const SchedulerOutput& so, const StepInputs& in, const at::Tensor& logits,
                          StepStats& stats) {
    for (const auto& c : so.chunks) {
      c.seq->num_computed += c.num_tokens;
      kv->cache_computed(c.seq->id, std::span<const int32_t>(c.seq->tokens), c.seq->num_computed);
    }

    // One draw per sample; a prompt that has just been computed draws for all its n samples.
    std::vector<SampleSpec> specs;
    for (size_t r = 0; r < in.sampling.size(); ++r) {
      Sequence* seq = in.sampling[r]->seq;
      RequestState& st = requests.at(seq->request);
      if (seq->num_generated() == 0 && seq->sample_index == 0) st.cached_prompt_tokens = seq->num_cached;
      for (int64_t j = 0; j < seq->fork_width; ++j) {
        const int64_t sample = seq->fork_width > 1 ? j : seq->sample_index;
        specs.push_back({static_cast<int64_t>(r), &st.request.params, seq->tokens, st.seed, sample,
                         seq->num_generated()});
      }
    }
    const auto draw_start = std::chrono::steady_clock::now();
    std::vector<SampledToken> drawn = sample_tokens(logits, specs);
    stats.draw_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - draw_start).count();
    stats.num_sampled = static_cast<int64_t>(drawn.size());

    size_t k = 0;
    for (const ScheduledChunk* c : in.sampling) {
      Sequence* seq = c->seq;
      const int64_t key = seq->request;
      RequestState& st = requests.at(key);
      const int64_t width = seq->fork_width;
      seq->fork_width = 1;
      // Siblings first: they share the parent's blocks (copy-on-write of the partial one).
      for (int64_t j = 1; j < width; ++j) {
        auto child = std::make_unique<Sequence>(*seq);
        child->id = next_seq++;
        child->sample_index = static_cast<int32_t>(j);
        Sequence* cp = child.get();
        st.seqs.push_back(std::move(child));
        kv->fork(seq->id, cp->id);
        scheduler->add_forked(seq, cp);
      }
      std::vector<Sequence*> group{seq};
      for (int64_t j = 1; j < width; ++j) group.push_back(st.seqs[st.seqs.size() - width + j].get());
      for (Sequence* g : group) {
        append(g, st, drawn[k++]);
        if (!requests.count(key)) break;  // its last sample finished: `st` is gone
      }
    }
  }

  // One engine step (vLLM V1's division): schedule, prepare the inputs, run the model, update
  // the requests from its output.
  StepStats step() {
    if (asleep) throw Error("the engine is asleep (KV cache released): call wake() before stepping");
    StepStats stats;
    using Clock = std::chrono::steady_clock;
    auto t0 = Clock::now();
    auto lap = [&t0] {
      const auto now = Clock::now();
      const double s = std::chrono::duration<double>(now - t0).count();
      t0 = now;
      return s;
    };
    const size_t finished_before = finished.size();
    SchedulerOutput so = scheduler->schedule();
    stats.num_preempted = so.num_preempted;
    if (so.empty()) return stats;
    cache->copy_blocks(so.copies);
    StepInputs in = prepare_inputs(so);
    stats.schedule_s = lap();
    const at::Tensor logits = execute_model(in, stats.forward_phases);
    stats.forward_s = lap();
    update_from_output(so, in, logits, stats);
    stats.sample_s = lap();
    stats.num_tokens = so.num_tokens;
    stats.num_finished = static_cast<int64_t>(finished.size() - finished_before);
    stats.num_running = static_cast<int64_t>(scheduler->num_running());
    stats.num_waiting = static_cast<int64_t>(scheduler->num_waiting());
    return stats;
  }

  std::optional<RequestOutput> abort(const std::string& id) {
    auto it = ids.find(id);
    if (it == ids.end()) return std::nullopt;
    const int64_t key = it->second;
    RequestState& st = requests.at(key);
    for (auto& seq : st.seqs) {
      if (st.done[seq->sample_index]) continue;
      scheduler->remove(seq.get());
      st.done[seq->sample_index] = sample_output(*seq, st, FinishReason::abort, "");
    }
    for (auto& d : st.done)  // samples not forked yet: nothing generated
      if (!d) d = SampleOutput{{}, {}, FinishReason::abort, "", "", {}};
    RequestOutput out = request_output(st);
    ids.erase(it);
    requests.erase(key);
    return out;
  }

  void warm_up() {
    const int64_t P = std::min<int64_t>(max_model_len - 1, std::min<int64_t>(32, config.max_num_batched_tokens));
    GenerationRequest r;
    r.request_id = "__roll_engine_warm_up__";
    for (int64_t i = 0; i < P; ++i) r.prompt_token_ids.push_back(static_cast<int32_t>(i % model->config().vocab_size));
    r.params.temperature = 1.0;
    r.params.top_k = 8;
    r.params.max_new_tokens = std::min<int64_t>(2, max_model_len - P);
    const size_t before = finished.size();
    add(std::move(r));
    while (requests.size() > 0 && finished.size() == before) step();
    // Drop its output and cache entries, and any warm-up counts.
    for (auto f = finished.begin(); f != finished.end(); ++f)
      if (f->request_id == "__roll_engine_warm_up__") {
        finished.erase(f);
        break;
      }
    kv->reset_prefix_cache();
    kv->reset_stats();
  }
};

EngineCore::EngineCore(std::shared_ptr<model::Transformer> model, EngineConfig config)
    : impl_(std::make_unique<Impl>(std::move(model), std::move(config))) {
  if (impl_->config.warm_up) impl_->warm_up();
}

EngineCore::~EngineCore() = default;

void EngineCore::add_request(GenerationRequest request) { impl_->add(std::move(request)); }

StepStats EngineCore::step() { return impl_->step(); }

bool EngineCore::has_unfinished() const { return !impl_->requests.empty(); }

std::vector<RequestOutput> EngineCore::outputs() {
  std::vector<RequestOutput> out(std::make_move_iterator(impl_->finished.begin()),
                                 std::make_move_iterator(impl_->finished.end()));
  impl_->finished.clear();
  return out;
}

std::optional<RequestOutput> EngineCore::abort(const std::string& request_id) { return impl_->abort(request_id); }

std::vector<RequestOutput> EngineCore::generate(std::vector<GenerationRequest> requests) {
  std::vector<std::string> order;
  for (auto& r : requests) {
    order.push_back(r.request_id);
    add_request(std::move(r));
  }
  std::unordered_map<std::string, RequestOutput> mine;
  for (const auto& id : order) mine.emplace(id, RequestOutput{});
  // Outputs of requests added by other callers stay queued for outputs().
  std::deque<RequestOutput> others;
  size_t pending = order.size();
  auto collect = [&] {
    for (auto& o : impl_->finished) {
      auto it = mine.find(o.request_id);
      if (it != mine.end() && it->second.request_id.empty()) {
        it->second = std::move(o);
        --pending;
      } else {
        others.push_back(std::move(o));
      }
    }
    impl_->finished.clear();
  };
  collect();
  while (pending > 0 && has_unfinished()) {
    step();
    collect();
  }
  impl_->finished = std::move(others);
  std::vector<RequestOutput> out;
  for (const auto& id : order) out.push_back(std::move(mine.at(id)));
  return out;
}

void EngineCore::update_weights(const model::NamedTensors& weights) {
  update_weights_in_place([&](const model::NamedTensors&) { impl_->model->load_weights(weights); });
}

void EngineCore::update_weights_in_place(const std::function<void(const model::NamedTensors& own)>& fill) {
  if (impl_->weights_shared) {
    // The tensors are someone else's (read-only) memory: take own copies before writing.
    at::NoGradGuard no_grad;
    for (const auto& [name, t] : impl_->model->named_parameters()) t.set_(t.clone());
    impl_->weights_shared = false;
  }
  impl_->replace_weights(fill);
}

void EngineCore::share_weights(const model::NamedTensors& weights) {
  impl_->replace_weights([&](const model::NamedTensors& own) {
    std::map<std::string, at::Tensor> by_name(own.begin(), own.end());
    for (const auto& [name, src] : weights) {
      auto it = by_name.find(name);
      if (it == by_name.end()) throw Error(fmt::format("share_weights: the engine has no tensor '{}'", name));
      at::Tensor dst = it->second;
      if (dst.scalar_type() != src.scalar_type() || !dst.sizes().equals(src.sizes()) || !src.is_contiguous())
        throw Error(fmt::format("share_weights: tensor '{}' is {} {}, the engine's {} {}", name,
                                c10::toString(src.scalar_type()), c10::str(src.sizes()),
                                c10::toString(dst.scalar_type()), c10::str(dst.sizes())));
    }
    // Every handle of a weight (the runner's per-layer ones too) shares its TensorImpl, so
    // pointing the impl at the new storage moves all of them.
    for (const auto& [name, src] : weights) by_name.at(name).set_(src);
  });
  impl_->weights_shared = true;
}

void EngineCore::set_weight_version(int64_t version) { impl_->weight_version = version; }

int64_t EngineCore::weight_version() const { return impl_->weight_version; }

void EngineCore::sleep() {
  if (impl_->asleep) return;
  impl_->scheduler->preempt_all();
  impl_->kv->reset();
  impl_->cache->release();
  impl_->asleep = true;
}

void EngineCore::wake() {
  if (!impl_->asleep) return;
  impl_->cache->allocate();
  impl_->asleep = false;
}

bool EngineCore::sleeping() const { return impl_->asleep; }

void EngineCore::reset_prefix_cache() { impl_->kv->reset_prefix_cache(); }

void EngineCore::warm_up() { impl_->warm_up(); }

KvCacheStats EngineCore::cache_stats() const { return impl_->kv->stats(); }

int64_t EngineCore::num_preemptions() const { return impl_->scheduler->num_preemptions(); }

int64_t EngineCore::max_model_len() const { return impl_->max_model_len; }

int64_t EngineCore::num_blocks() const { return impl_->kv->num_blocks(); }

const EngineConfig& EngineCore::config() const { return impl_->config; }

}  // namespace roll::engine
