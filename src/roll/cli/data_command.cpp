// `roll data`: synthetic RLVR datasets as JSONL (pipeline/synthetic_data.h, docs/data.md).
//
//   roll data arithmetic --seed S --n N --split train|test --out FILE [--digits D]
//   roll data code       --seed S --n N --split train|test --out FILE
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <functional>
#include <iostream>

#include "roll/cli/commands.h"
#include "roll/core/error.h"
#include "roll/pipeline/synthetic_data.h"

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

}  // namespace

void register_data(CLI::App& app) {
  auto* data = app.add_subcommand("data", "Synthetic RLVR datasets (JSONL)");
  data->require_subcommand(1);
  auto arithmetic = std::make_shared<DataOptions>();
  auto* a = add_generator(*data, "arithmetic", "Integer +, -, * problems with exact answers (domain math_rule)",
                          pipeline::arithmetic_rows, arithmetic);
  a->add_option("--digits", arithmetic->gen.digits, "Operands have 1..digits digits (1..9)")->capture_default_str();
  add_generator(*data, "code",
                fmt::format("Python function tasks with assert tests ({} templates, domain code_sandbox)",
                            pipeline::code_task_count()),
                pipeline::code_rows, std::make_shared<DataOptions>());
}

}  // namespace roll::cli
