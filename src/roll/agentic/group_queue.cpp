#include "roll/agentic/group_queue.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <future>

#include "roll/core/error.h"

namespace roll::agentic {
namespace {

// Answers collected under the lock run after it is released, so a callback never runs with it.
void run_answers(
    std::vector<std::pair<GroupQueueManager::EpisodeCallback, std::optional<GroupQueueManager::Episode>>>& answers) {
  for (auto& [done, ep] : answers) done(ep);
}

}  // namespace

GroupQueueManager::GroupQueueManager(GroupQueueOptions options) : o_(std::move(options)) {
  if (o_.num_groups <= 0 || o_.group_size <= 0 || o_.episodes_per_step <= 0 || o_.group_size_redundancy < 0 ||
      o_.async_generation_ratio < 0)
    throw Error(fmt::format("group queue: bad sizes (groups {}, group_size {}, redundancy {}, episodes/step {}, "
                            "async ratio {})",
                            o_.num_groups, o_.group_size, o_.group_size_redundancy, o_.episodes_per_step,
                            o_.async_generation_ratio));
  groups_.resize(o_.num_groups);
}

void GroupQueueManager::create_episode(Group& g, int64_t step) {
  if (o_.max_episodes_per_group >= 0 && g.next_episode >= o_.max_episodes_per_group) return;
  g.episodes.push_back(EpisodeState{g.next_episode++, step});
}

void GroupQueueManager::advance_step(int64_t step) {
  Answers answers;
  std::unique_lock<std::mutex> lock(mu_);
  current_step_ = step;
  // First step: the async ratio's look-ahead batches are created up front (docs/agentic.md).
  const int64_t batches = first_step_ ? 1 + o_.async_generation_ratio : 1;
  first_step_ = false;
  for (auto& g : groups_) {
    // Episodes too old for this step are dropped with their rollouts.
    while (!g.episodes.empty() && step - g.episodes.front().create_step > o_.async_generation_ratio)
      g.episodes.pop_front();
    for (int64_t b = 0; b < batches; ++b)
      for (int64_t e = 0; e < o_.episodes_per_step; ++e) create_episode(g, step);
    serve_waiters(g, answers);
  }
  cv_.notify_all();
  lock.unlock();
  run_answers(answers);
}

std::vector<std::pair<int64_t, int64_t>> GroupQueueManager::plan_batch(int64_t batch_size, int64_t current_step) const {
  // Oldest creation step first; within a step, group order. A younger step is touched only when
  // every episode of the older ones is taken, so a batch never mixes in younger episodes while
  // older ones are still running (the async invariant: start step == max(0, step - ratio)).
  std::vector<std::pair<int64_t, int64_t>> picked;  // (group, episode_id)
  int64_t n = 0;
  for (int64_t step = current_step - o_.async_generation_ratio; step <= current_step; ++step) {
    bool pending = false;
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      for (const auto& e : groups_[gi].episodes) {
        if (e.create_step != step) continue;
        if (!e.complete) {
          pending = true;
          continue;
        }
        if (n >= batch_size) continue;
        picked.emplace_back(static_cast<int64_t>(gi), e.episode_id);
        n += o_.group_size;
      }
    if (n >= batch_size) return picked;
    if (pending) return {};  // must wait for this step's episodes
  }
  return {};
}

std::optional<std::vector<Rollout>> GroupQueueManager::get_batch(int64_t batch_size, int64_t current_step,
                                                                 double timeout_s, const FailureProbe& failure) {
  std::unique_lock<std::mutex> lock(mu_);
  const int64_t total_envs = o_.num_groups * (o_.group_size + o_.group_size_redundancy);
  std::vector<std::pair<int64_t, int64_t>> picked;
  auto done = [&] {
    if (shutdown_) return true;
    if (batch_size < 0) {
      int64_t exited = 0;
      for (const auto& g : groups_) exited += g.exited_envs;
      return exited >= total_envs;
    }
    picked = plan_batch(batch_size, current_step);
    return !picked.empty();
  };
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_s));
  for (;;) {
    auto until = deadline;
    if (failure)
      until = std::min(until, std::chrono::steady_clock::now() +
                                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(kFailurePollS)));
    if (cv_.wait_until(lock, until, done)) break;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    lock.unlock();  // the probe takes the clusters' locks
    auto why = failure();
    lock.lock();
    if (why) throw Error("rollout stopped: " + *why);
  }
  if (shutdown_) return std::nullopt;
  if (batch_size < 0) {
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      for (const auto& e : groups_[gi].episodes)
        if (e.complete) picked.emplace_back(static_cast<int64_t>(gi), e.episode_id);
  }
  std::vector<Rollout> out;
  for (const auto& [gi, ep] : picked) {
    auto& eps = groups_[gi].episodes;
    for (auto it = eps.begin(); it != eps.end(); ++it)
      if (it->episode_id == ep) {
        // The first group_size to finish form the group; in slot order, so a batch's rows do not
        // depend on which env finished first.
        std::vector<Rollout> group(it->rollouts.begin(), it->rollouts.begin() + o_.group_size);
        std::stable_sort(group.begin(), group.end(), [](const Rollout& a, const Rollout& b) { return a.slot < b.slot; });
        out.insert(out.end(), std::make_move_iterator(group.begin()), std::make_move_iterator(group.end()));
        eps.erase(it);
        break;
      }
  }
  cv_.notify_all();
  return out;
}

std::optional<GroupQueueManager::Episode> GroupQueueManager::take_episode(Group& g) {
  const int64_t width = o_.group_size + o_.group_size_redundancy;
  for (auto& e : g.episodes)
    if (!e.complete && e.running < width) return Episode{e.episode_id, e.create_step, e.running++};
  return std::nullopt;
}

bool GroupQueueManager::finished(const Group& g) const {
  // Finite mode: once the last episode is created, no more come.
  return shutdown_ || (o_.max_episodes_per_group >= 0 && g.next_episode >= o_.max_episodes_per_group);
}

void GroupQueueManager::serve_waiters(Group& g, Answers& out) {
  while (!g.waiters.empty()) {
    std::optional<Episode> ep = shutdown_ ? std::nullopt : take_episode(g);
    if (!ep && !finished(g)) return;
    if (ep) g.playing[g.waiters.front().env_id] = Playing{ep->episode_id, std::chrono::steady_clock::now()};
    out.emplace_back(std::move(g.waiters.front().done), ep);
    g.waiters.pop_front();
  }
}

void GroupQueueManager::get_episode_async(int64_t group_id, int64_t env_id, EpisodeCallback done) {
  if (group_id < 0 || group_id >= o_.num_groups)
    throw Error(fmt::format("group queue: group id {} outside [0, {})", group_id, o_.num_groups));
  Answers answers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Group& g = groups_[group_id];
    g.waiters.push_back(Waiter{env_id, std::move(done)});
    serve_waiters(g, answers);
  }
  run_answers(answers);
}

std::optional<GroupQueueManager::Episode> GroupQueueManager::get_episode(int64_t group_id, int64_t env_id) {
  // The promise is shared with the callback: it may still be inside set_value when get() returns.
  auto answer = std::make_shared<std::promise<std::optional<Episode>>>();
  auto result = answer->get_future();
  get_episode_async(group_id, env_id, [answer](std::optional<Episode> ep) { answer->set_value(ep); });
  return result.get();
}

void GroupQueueManager::put(Rollout rollout) {
  Answers answers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (rollout.group_id < 0 || rollout.group_id >= o_.num_groups) return;
    Group& g = groups_[rollout.group_id];
    g.playing.erase(rollout.env_id);
    for (auto it = g.episodes.begin(); it != g.episodes.end(); ++it) {
      if (it->episode_id != rollout.episode_id) continue;
      if (it->complete) return;  // redundant extra rollout: discarded
      it->rollouts.push_back(std::move(rollout));
      if (static_cast<int64_t>(it->rollouts.size()) < o_.group_size) return;
      if (o_.group_filter && o_.group_filter(it->rollouts.front().group_id, it->episode_id, it->rollouts)) {
        // Dropped by the filter: a fresh episode takes its place (same creation step).
        ++filtered_;
        const int64_t step = it->create_step;
        g.episodes.erase(it);
        if (o_.max_episodes_per_group < 0 || g.next_episode < o_.max_episodes_per_group)
          g.episodes.push_back(EpisodeState{g.next_episode++, step});
        serve_waiters(g, answers);
      } else {
        it->complete = true;
      }
      cv_.notify_all();
      break;
    }
    // An episode not found was dropped (too old): its rollout is ignored.
  }
  run_answers(answers);
}

void GroupQueueManager::env_exit(int64_t group_id, int64_t env_id) {
  Answers answers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (group_id >= 0 && group_id < o_.num_groups) {
      Group& g = groups_[group_id];
      ++g.exited_envs;
      g.playing.erase(env_id);
      // An ask still pending from this env has no reader any more.
      for (auto it = g.waiters.begin(); it != g.waiters.end();)
        if (it->env_id == env_id) {
          answers.emplace_back(std::move(it->done), std::nullopt);
          it = g.waiters.erase(it);
        } else {
          ++it;
        }
    }
    cv_.notify_all();
  }
  run_answers(answers);
}

void GroupQueueManager::shutdown() {
  Answers answers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
    for (auto& g : groups_) serve_waiters(g, answers);
    cv_.notify_all();
  }
  run_answers(answers);
}

int64_t GroupQueueManager::group_filter_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return filtered_;
}

std::vector<GroupQueueManager::HungEnv> GroupQueueManager::hung_envs(double timeout_s) const {
  const auto now = std::chrono::steady_clock::now();
  std::vector<HungEnv> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t gi = 0; gi < groups_.size(); ++gi)
    for (const auto& [env_id, p] : groups_[gi].playing) {
      const double s = std::chrono::duration<double>(now - p.since).count();
      if (s > timeout_s) out.push_back(HungEnv{static_cast<int64_t>(gi), env_id, p.episode_id, s});
    }
  return out;
}

nlohmann::json GroupQueueManager::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : groups_) {
    nlohmann::json open = nlohmann::json::array();
    for (const auto& e : g.episodes) open.push_back({e.episode_id, e.create_step});
    groups.push_back({{"next_episode", g.next_episode}, {"episodes", open}});
  }
  return {{"current_step", current_step_}, {"started", !first_step_}, {"filtered", filtered_}, {"groups", groups}};
}

void GroupQueueManager::restore(const nlohmann::json& state) {
  std::lock_guard<std::mutex> lock(mu_);
  try {
    const auto& groups = state.at("groups");
    if (!groups.is_array() || static_cast<int64_t>(groups.size()) != o_.num_groups)
      throw Error(fmt::format("'groups' holds {} groups, the queue has {}", groups.is_array() ? groups.size() : 0,
                              o_.num_groups));
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      Group& g = groups_[gi];
      if (!g.episodes.empty() || !g.waiters.empty() || g.next_episode != 0)
        throw Error("the queue has handed out episodes already; restore comes before the first step");
      g.next_episode = groups[gi].at("next_episode").get<int64_t>();
      for (const auto& e : groups[gi].at("episodes"))
        g.episodes.push_back(EpisodeState{e.at(0).get<int64_t>(), e.at(1).get<int64_t>()});
    }
    current_step_ = state.at("current_step").get<int64_t>();
    first_step_ = !state.at("started").get<bool>();
    filtered_ = state.at("filtered").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("group queue: malformed saved state: ") + e.what());
  } catch (const Error& e) {
    throw Error(std::string("group queue: cannot restore the saved state: ") + e.what());
  }
}

}  // namespace roll::agentic
