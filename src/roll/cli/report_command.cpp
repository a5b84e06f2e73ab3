// `roll report RUN_DIR`: HTML and PNG charts of a run's metrics.jsonl (track/report.h,
// docs/tracking.md). RUN_DIR is a run folder (it holds metrics.jsonl) or a folder above several.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "roll/cli/commands.h"
#include "roll/core/error.h"
#include "roll/track/report.h"

namespace roll::cli {

void register_report(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("report", "HTML page and PNG charts (gnuplot) of a run's metrics.jsonl");
  cmd->add_option("RUN_DIR", *dir,
                  "A run folder (metrics.jsonl, hparams.json), or a folder above runs: each gets a report")
      ->required();
  cmd->callback([dir] {
    try {
      std::string root_index;
      for (const auto& r : track::write_reports(*dir, &root_index))
        std::cout << fmt::format("wrote {} ({} charts)\n", r.index_html, r.pngs.size());
      if (!root_index.empty()) std::cout << fmt::format("wrote {} (index of the runs)\n", root_index);
      set_exit_code(0);
    } catch (const Error& e) {
      std::cerr << "error: " << e.what() << "\n";
      set_exit_code(1);
    }
  });
}

}  // namespace roll::cli
