// `roll data`: synthetic RLVR datasets as JSONL (datagen/synthetic_data.h, docs/data.md).
//
//   roll data arithmetic --seed S --n N --split train|test --out FILE [--digits D]
//   roll data code       --seed S --n N --split train|test --out FILE
//   roll data distill    --seed S --n N --split train|test --out FILE [--digits D]
//   roll data preference --seed S --n N --split train|test --out FILE
//                        (DPO pairs: instruction, chosen, rejected)
//   roll data expert     --config_path P --config_name N --tag T --seed S --n N --noise F --out FILE
//                        (SFT conversations of the BFS expert in env T of an agentic config)
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <functional>
#include <iostream>

#include "roll/agentic/env_layout.h"
#include "roll/datagen/expert_data.h"
#include "roll/cli/commands.h"
#include "roll/cli/config_options.h"
#include "roll/config/load.h"
#include "roll/core/error.h"
#include "roll/datagen/synthetic_data.h"

namespace roll::cli {

namespace {

using Generator = std::function<std::vector<nlohmann::ordered_json>(const pipeline::SyntheticDataOptions&)>;

struct DataOptions {
  pipeline::SyntheticDataOptions gen;
  std::string out;
};

CLI::App* add_generator(CLI::App& data, const std::string& name, const std::string& help, Generator generate,
                        std::shared_ptr<DataOptions> o) {
  auto* cmd = data.add_subcommand(name, help);
  cmd->add_option("--seed", o->gen.seed, "Random seed (same seed, same rows)")->capture_default_str();
  cmd->add_option("--n", o->gen.n, "Rows to write")->capture_default_str();
  cmd->add_option("--split", o->gen.split, "train | test (disjoint problems)")
      ->capture_default_str()
      ->check(CLI::IsMember({"train", "test"}));
  cmd->add_option("--out,-o", o->out, "JSONL file to write")->required();
  cmd->callback([o, name, generate] {
    try {
      const auto rows = generate(o->gen);
      pipeline::write_jsonl(o->out, rows);
      std::cerr << fmt::format("wrote {} ({} {} rows, {} split, seed {})\n", o->out, rows.size(), name, o->gen.split,
                               o->gen.seed);
      set_exit_code(0);
    } catch (const Error& e) {
      std::cerr << "error: " << e.what() << "\n";
      set_exit_code(1);
    }
  });
  return cmd;
}

struct ExpertOptions {
  ConfigOptions config;
  std::string tag;
  agentic::ExpertDataOptions gen;
  std::string out;
};

void add_expert(CLI::App& data) {
  auto o = std::make_shared<ExpertOptions>();
  auto* cmd = data.add_subcommand(
      "expert", "SFT conversations of a breadth-first-search expert playing an agentic config's env (FrozenLake, "
                "Sokoban), with a fraction of random actions, in the env manager's prompts");
  add_config_options(*cmd, o->config);
  cmd->add_option("--tag", o->tag, "The custom_envs entry to play (default: train_env_manager's first tag)");
  cmd->add_option("--seed", o->gen.seed, "Random seed (same seed, same rows)")->capture_default_str();
  cmd->add_option("--n", o->gen.n, "Episodes to play (a row each; a row per turn for StepEnvManager envs)")->capture_default_str();
  cmd->add_option("--noise", o->gen.noise, "Probability of a uniformly random action per turn")->capture_default_str();
  cmd->add_option("--out,-o", o->out, "JSONL file to write")->required();
  cmd->callback([o] {
    try {
      const auto loaded = config::load_config(o->config.load_request(config::PipelineKind::agentic));
      std::string tag = o->tag;
      if (tag.empty()) {
        if (loaded.config.train_env_manager.tags.empty())
          throw ConfigError("train_env_manager.tags", "no tag to play: pass --tag");
        tag = loaded.config.train_env_manager.tags.front();
      }
      const auto rows = agentic::expert_conversations(agentic::env_spec_of(loaded.config, tag), o->gen);
      pipeline::write_jsonl(o->out, rows);
      // StepEnvManager rows are turns: count an episode at its first turn.
      int64_t episodes = 0, solved = 0;
      for (const auto& r : rows) {
        if (r.contains("step") && r["step"].get<int64_t>() != 0) continue;
        ++episodes;
        solved += r["success"].get<bool>();
      }
      std::cerr << fmt::format("wrote {} ({} rows: {} {} episodes, {} reach the goal, noise {}, seed {})\n", o->out,
                               rows.size(), episodes, tag, solved, o->gen.noise, o->gen.seed);
      set_exit_code(0);
    } catch (const config::ConfigErrors& e) {
      print_config_errors(e);
      set_exit_code(2);
    } catch (const Error& e) {
      std::cerr << "error: " << e.what() << "\n";
      set_exit_code(1);
    }
  });
}

}  // namespace

void register_data(CLI::App& app) {
  auto* data = app.add_subcommand("data", "Synthetic RLVR datasets (JSONL)");
  data->require_subcommand(1);
  auto arithmetic = std::make_shared<DataOptions>();
  auto* a = add_generator(*data, "arithmetic", "Integer +, -, * problems with exact answers (domain math_rule)",
                          pipeline::arithmetic_rows, arithmetic);
  a->add_option("--digits", arithmetic->gen.digits, "Operands have 1..digits digits (1..9)")->capture_default_str();
  a->add_flag("--with-answer", arithmetic->gen.with_answer,
              "Add the assistant turn \\boxed{answer} to each row (SFT data; the RLVR pipeline ignores it)");
  add_generator(*data, "code",
                fmt::format("Python function tasks with assert tests ({} templates, domain code_sandbox)",
                            pipeline::code_task_count()),
                pipeline::code_rows, std::make_shared<DataOptions>());
  add_generator(*data, "preference",
                "DPO preference pairs: \"What is A + B?\" with chosen \"The answer is C.\" and an unhelpful or "
                "wrong rejected answer (columns instruction, chosen, rejected)",
                pipeline::preference_rows, std::make_shared<DataOptions>());
  auto distill = std::make_shared<DataOptions>();
  auto* d = add_generator(*data, "distill",
                          "Distillation rows: the arithmetic problems as question, \\boxed{answer} as answer "
                          "(columns question, answer)",
                          pipeline::distill_rows, distill);
  d->add_option("--digits", distill->gen.digits, "Operands have 1..digits digits (1..9)")->capture_default_str();
  add_expert(*data);
}

}  // namespace roll::cli
