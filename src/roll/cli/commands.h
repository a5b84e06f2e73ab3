#pragma once
// Subcommand registration. Each register_* adds a subcommand whose callback runs it and sets
// the process exit code (0 ok, 1 failed, 2 usage error).
namespace CLI {
class App;
}

namespace roll::cli {

void register_validate(CLI::App& app);
void register_defaults(CLI::App& app);
void register_model(CLI::App& app);
void register_lora(CLI::App& app);
void register_generate(CLI::App& app);
void register_worker(CLI::App& app);
void register_data(CLI::App& app);
void register_pipelines(CLI::App& app);
void register_report(CLI::App& app);
void register_start(CLI::App& app);   // the manual cluster (Method B): start, status, stop
void register_status(CLI::App& app);
void register_stop(CLI::App& app);

void set_exit_code(int code);
int exit_code();

}  // namespace roll::cli
