#pragma once
// Episode bookkeeping between env workers and the driver (docs/agentic.md): per env group, episodes
// are created each step, handed to the group's envs (group_size + redundancy of them play the same
// episode), and a group is complete when group_size rollouts arrived. The driver takes complete
// groups, oldest first. Thread-safe; the runtime publishes it as a service.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "roll/core/batch.h"

namespace roll::agentic {

struct Rollout {
  int64_t group_id = 0;
  int64_t episode_id = 0;
  int64_t env_id = 0;
  int64_t start_step = 0;  // the step the episode was created for
  std::shared_ptr<const Batch> data;  // one trajectory (TrajEnvManager) or its per-turn samples
  int64_t slot = 0;  // which of the episode's hand-outs played it (Episode::slot)
};

struct GroupQueueOptions {
  int64_t num_groups = 1;
  int64_t group_size = 1;
  int64_t group_size_redundancy = 0;
  int64_t episodes_per_step = 1;  // max_traj_per_env
  int64_t async_generation_ratio = 0;
  // Finite mode (validation with val_batch_size -1, rollout-only): stop handing out episodes after
  // this many per group; -1 = a new batch of episodes every step.
  int64_t max_episodes_per_group = -1;
  // ROLL's GroupFilter.filter(group_id, episode_id, rollouts): true drops the group and replaces
  // its episode.
  std::function<bool(int64_t group_id, int64_t episode_id, const std::vector<Rollout>&)> group_filter;
};

class GroupQueueManager {
 public:
  explicit GroupQueueManager(GroupQueueOptions options);

  // Driver: starts step `step` (creates episodes, drops those older than the async ratio).
  void advance_step(int64_t step);
  // Driver: waits for complete groups holding >= batch_size rollouts of episodes still fresh for
  // `current_step` and returns them (whole groups, oldest first). batch_size < 0: waits until every
  // env has exited and returns everything complete. nullopt on timeout or shutdown.
  // `failure`, when given, is asked every kFailurePollS while waiting: the envs' rollouts never
  // come once a worker of the run died, so a failure it names ends the wait with roll::Error
  // carrying it.
  using FailureProbe = std::function<std::optional<std::string>()>;
  static constexpr double kFailurePollS = 0.2;
  std::optional<std::vector<Rollout>> get_batch(int64_t batch_size, int64_t current_step, double timeout_s,
                                                const FailureProbe& failure = {});

  // Env side: the next episode for `env_id` of `group_id` (blocks until one exists); nullopt when
  // the queue is finished or shut down.
  // slot: the how-manieth hand-out of this episode (0 .. group_size + redundancy - 1). Env managers
  // seed their sampling by (episode, slot), so what an episode's rollouts hold does not depend on
  // which env asked first.
  struct Episode {
    int64_t episode_id;
    int64_t start_step;
    int64_t slot = 0;
  };
  std::optional<Episode> get_episode(int64_t group_id, int64_t env_id);
  // The same without blocking, for a service: `done` runs at once on this thread when an episode
  // is there or the queue is finished, else later on the thread that creates one (advance_step,
  // a filtered group's replacement), shuts the queue down, or calls env_exit for this env (which
  // answers its pending ask with nullopt). `done` must be short and must not call the queue.
  using EpisodeCallback = std::function<void(std::optional<Episode>)>;
  void get_episode_async(int64_t group_id, int64_t env_id, EpisodeCallback done);
  // Env side: a finished rollout (ignored when its episode was dropped or its group is complete).
  void put(Rollout rollout);
  // Env side: `env_id` will ask for no more episodes.
  void env_exit(int64_t group_id, int64_t env_id);

  void shutdown();
  int64_t group_filter_count() const;

  // An env that was handed an episode more than `timeout_s` ago and has not put its rollout nor
  // exited (ROLL's EnvActivityMonitor, env_activity_monitor.h).
  struct HungEnv {
    int64_t group_id, env_id, episode_id;
    double seconds;  // since the hand-out
  };
  std::vector<HungEnv> hung_envs(double timeout_s) const;

  // What decides the episodes of every later step, for a checkpoint at a step boundary: the step,
  // each group's next episode id and its episodes not yet taken (id, creation step). Rollouts and
  // hand-outs of those episodes are not kept: after restore() they are played again from the
  // start, which the (episode, slot) seeds make give the same rollouts.
  nlohmann::json state() const;
  // Before the first advance_step of a resumed run; roll::Error naming the key on a state of
  // another queue shape.
  void restore(const nlohmann::json& state);

 private:
  struct EpisodeState {
    int64_t episode_id;
    int64_t create_step;
    int64_t running = 0;  // envs handed this episode
    std::vector<Rollout> rollouts;
    bool complete = false;
  };
  struct Waiter {
    int64_t env_id;
    EpisodeCallback done;
  };
  struct Playing {
    int64_t episode_id;
    std::chrono::steady_clock::time_point since;
  };
  struct Group {
    std::deque<EpisodeState> episodes;  // oldest first
    std::map<int64_t, Playing> playing;  // env id -> the episode it was handed last, until its put
    int64_t next_episode = 0;
    int64_t exited_envs = 0;
    std::deque<Waiter> waiters;  // envs asking for an episode, in arrival order
  };
  using Answers = std::vector<std::pair<EpisodeCallback, std::optional<Episode>>>;
  void create_episode(Group& g, int64_t step);
  std::optional<Episode> take_episode(Group& g);  // hands out the oldest open episode
  bool finished(const Group& g) const;            // no episode will ever come again
  void serve_waiters(Group& g, Answers& out);     // under mu_; `out` is run after unlocking
  std::vector<std::pair<int64_t, int64_t>> plan_batch(int64_t batch_size, int64_t current_step) const;

  GroupQueueOptions o_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Group> groups_;
  int64_t current_step_ = -1;
  bool first_step_ = true;
  bool shutdown_ = false;
  int64_t filtered_ = 0;
};

}  // namespace roll::agentic
