// `roll generate`: offline generation with the built-in engine over a model directory and a JSONL
// file of prompts (chat template applied), writing one JSONL line per prompt, with progress.
//
//   roll generate --model DIR --input prompts.jsonl --output out.jsonl [--template native]
//                 [--max-new-tokens 256] [--temperature 0.95] [--top-p 0.7] [--top-k 50] [--n 1] ...
//
// An input line is {"id": any, "messages": [{"role", "content"}, ...]}, {"id", "prompt": "text"}
// (a single user turn) or {"id", "prompt_token_ids": [...]} (fed as they are). An output line is {"id", "prompt_tokens", "outputs": [{"text",
// "token_ids", "logprobs", "finish_reason"}]}, or {"id", "error"} for a line that could not run;
// the other lines still run and the exit code is 1.
#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "roll/cli/commands.h"
#include "roll/core/error.h"
#include "roll/core/progress.h"
#include "roll/engine/engine_core.h"
#include "roll/model/chat_template.h"
#include "roll/model/hf_config.h"
#include "roll/model/stop_tokens.h"
#include "roll/model/tokenizer.h"
#include "roll/model/transformer.h"

namespace roll::cli {

namespace {

struct GenerateOptions {
  std::string model_dir, input, output, template_name = "native", dtype = "bf16";
  int64_t max_new_tokens = 256, top_k = -1, n = 1, max_model_len = 0, block_size = 16, max_num_seqs = 256,
          max_num_batched_tokens = 8192;
  double temperature = 1.0, top_p = 1.0, repetition_penalty = 1.0, gpu_memory_utilization = 0.9;
  double memory_gb = 0;
  uint64_t seed = 0;
  std::vector<std::string> stop;
  bool no_prefix_caching = false;
  int threads = 0;
};

struct Line {
  nlohmann::json id;
  std::vector<int32_t> prompt;
  std::string error;
  nlohmann::json result;
};

// The id of an input line: its "id" field, else its line number.
nlohmann::json line_id(const nlohmann::json& j, size_t number) {
  return j.is_object() && j.contains("id") ? j["id"] : nlohmann::json(number);
}

int run(const GenerateOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  at::set_num_threads(o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  if (!std::filesystem::is_directory(o.model_dir)) throw Error(fmt::format("--model {}: not a directory", o.model_dir));
  auto tokenizer = std::make_shared<model::Tokenizer>(model::Tokenizer::from_dir(o.model_dir));
  const auto chat = model::ChatTemplate::from_model_dir(o.template_name, o.model_dir);
  // ROLL passes [eos, pad] as stop token ids (docs/config.md).
  const std::vector<int32_t> stop_ids = model::stop_token_ids(o.model_dir, *tokenizer);

  std::ifstream in(o.input);
  if (!in) throw Error(fmt::format("--input {}: cannot open", o.input));
  std::vector<Line> lines;
  std::string text;
  for (size_t number = 1; std::getline(in, text); ++number) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    Line line;
    line.id = nlohmann::json(number);
    try {
      auto j = nlohmann::ordered_json::parse(text);
      line.id = line_id(nlohmann::json::parse(text), number);
      if (j.is_object() && j.contains("prompt_token_ids")) {  // token ids as they are: no template
        if (!j["prompt_token_ids"].is_array() || j["prompt_token_ids"].empty())
          throw Error("\"prompt_token_ids\" must be a non-empty list of token ids");
        for (const auto& t : j["prompt_token_ids"]) {
          if (!t.is_number_integer()) throw Error("\"prompt_token_ids\" holds a value that is not an integer");
          line.prompt.push_back(t.get<int32_t>());
        }
        lines.push_back(std::move(line));
        continue;
      }
      nlohmann::ordered_json messages;
      if (j.is_object() && j.contains("messages")) messages = j["messages"];
      else if (j.is_object() && j.contains("prompt") && j["prompt"].is_string())
        messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", j["prompt"]}}});
      else throw Error("expected an object with \"messages\" (a list), \"prompt\" (a string) or \"prompt_token_ids\"");
      if (!messages.is_array()) throw Error("\"messages\" must be a list");
      const std::string prompt = chat.apply(messages, /*add_generation_prompt=*/true);
      line.prompt = tokenizer->encode(prompt, /*add_special_tokens=*/false);
    } catch (const std::exception& e) {
      line.error = fmt::format("{}:{}: {}", o.input, number, e.what());
    }
    lines.push_back(std::move(line));
  }

  model::ModelConfig cfg = model::ModelConfig::load((std::filesystem::path(o.model_dir) / "config.json").string());
  auto model = model::Transformer::load(o.model_dir, o.dtype == "fp32" ? at::kFloat : at::kBFloat16);
  engine::EngineConfig ec;
  ec.block_size = o.block_size;
  ec.gpu_memory_utilization = o.gpu_memory_utilization;
  ec.memory_budget_bytes = static_cast<int64_t>(o.memory_gb * (1ull << 30));
  ec.enable_prefix_caching = !o.no_prefix_caching;
  ec.max_num_seqs = o.max_num_seqs;
  ec.max_num_batched_tokens = o.max_num_batched_tokens;
  ec.seed = o.seed;
  ec.detokenize = [tokenizer](std::span<const int32_t> ids) { return tokenizer->decode(ids, true); };
  // Default length: the longest prompt plus max_new_tokens, within the model's limit.
  size_t longest = 0;
  for (const auto& l : lines) longest = std::max(longest, l.prompt.size());
  ec.max_model_len = o.max_model_len > 0 ? o.max_model_len
                                          : std::min<int64_t>(cfg.max_position_embeddings,
                                                              static_cast<int64_t>(longest) + o.max_new_tokens);
  engine::EngineCore eng(model, ec);

  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!lines[i].error.empty()) continue;
    GenerationRequest r;
    r.request_id = std::to_string(i);
    r.prompt_token_ids = lines[i].prompt;
    r.params.temperature = o.temperature;
    r.params.top_p = o.top_p;
    r.params.top_k = o.top_k;
    r.params.repetition_penalty = o.repetition_penalty;
    r.params.n = o.n;
    r.params.max_new_tokens = o.max_new_tokens;
    r.params.seed = o.seed + i;
    r.params.stop_token_ids = stop_ids;
    r.params.stop = o.stop;
    try {
      eng.add_request(std::move(r));
    } catch (const Error& e) {
      lines[i].error = e.what();
    }
  }

  auto progress = make_progress();
  const int64_t total = static_cast<int64_t>(std::count_if(lines.begin(), lines.end(), [](const Line& l) { return l.error.empty(); }));
  progress->start("generate", total, "prompt");
  int64_t generated = 0;
  // Steps that only decode (every token through the forward is sampled), apart: the rate bench_engine
  // reports for decode, so the two can be compared at the same batch.
  int64_t decode_tokens = 0;
  double decode_s = 0;
  const auto gen_start = std::chrono::steady_clock::now();
  while (eng.has_unfinished()) {
    const auto step_start = std::chrono::steady_clock::now();
    const engine::StepStats st = eng.step();
    generated += st.num_sampled;
    if (st.num_tokens > 0 && st.num_tokens == st.num_sampled) {
      decode_tokens += st.num_sampled;
      decode_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
    }
    for (auto& out : eng.outputs()) {
      Line& l = lines[std::stoul(out.request_id)];
      nlohmann::json samples = nlohmann::json::array();
      for (const auto& s : out.samples)
        samples.push_back({{"text", s.text},
                           {"token_ids", s.token_ids},
                           {"logprobs", s.logprobs},
                           {"finish_reason", roll::to_string(s.finish_reason)}});
      l.result = {{"prompt_tokens", out.prompt_token_ids.size()}, {"outputs", samples}};
      progress->advance(1);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - gen_start).count();
    progress->set_postfix(fmt::format("{:.1f} tok/s", s > 0 ? generated / s : 0.0));
  }
  progress->finish();

  std::ofstream out(o.output);
  if (!out) throw Error(fmt::format("--output {}: cannot write", o.output));
  int failed = 0;
  for (const auto& l : lines) {
    nlohmann::json j = {{"id", l.id}};
    if (!l.error.empty()) {
      j["error"] = l.error;
      std::cerr << "error: " << l.error << "\n";
      ++failed;
    } else {
      j.update(l.result);
    }
    out << j.dump() << "\n";
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double gen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - gen_start).count();
  std::cerr << fmt::format("wrote {} ({} prompts, {} failed, {} tokens generated) in {:.1f}s; generation {:.1f}s, "
                           "{:.1f} tok/s in decode-only steps\n",
                           o.output, lines.size(), failed, generated, secs, gen_s,
                           decode_s > 0 ? decode_tokens / decode_s : 0.0);
  return failed ? 1 : 0;
}

}  // namespace

void register_generate(CLI::App& app) {
  auto o = std::make_shared<GenerateOptions>();
  auto* cmd = app.add_subcommand("generate", "Generate from a JSONL file of prompts with the built-in engine");
  cmd->add_option("--model,-m", o->model_dir, "HF model directory (config.json, safetensors, tokenizer)")->required();
  cmd->add_option("--input,-i", o->input, "JSONL: {\"id\", \"messages\": [...]} or {\"id\", \"prompt\": \"...\"}")
      ->required();
  cmd->add_option("--output,-o", o->output, "JSONL output, one line per input line")->required();
  cmd->add_option("--template", o->template_name, "Chat template (ROLL's data_args.template names)")
      ->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "fp32 | bf16")->capture_default_str()->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->add_option("--max-new-tokens", o->max_new_tokens, "Tokens to generate at most")->capture_default_str();
  cmd->add_option("--temperature", o->temperature, "0: greedy")->capture_default_str();
  cmd->add_option("--top-p", o->top_p, "Nucleus mass in (0, 1]")->capture_default_str();
  cmd->add_option("--top-k", o->top_k, "-1: off")->capture_default_str();
  cmd->add_option("--repetition-penalty", o->repetition_penalty)->capture_default_str();
  cmd->add_option("--n", o->n, "Samples per prompt")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed (prompt i uses seed + i)")->capture_default_str();
  cmd->add_option("--stop", o->stop, "Stop strings");
  cmd->add_option("--max-model-len", o->max_model_len, "Default: longest prompt + max-new-tokens");
  cmd->add_option("--block-size", o->block_size)->capture_default_str();
  cmd->add_option("--max-num-seqs", o->max_num_seqs)->capture_default_str();
  cmd->add_option("--max-num-batched-tokens", o->max_num_batched_tokens)->capture_default_str();
  cmd->add_option("--gpu-memory-utilization", o->gpu_memory_utilization, "Share of the memory budget")
      ->capture_default_str();
  cmd->add_option("--memory-gb", o->memory_gb, "Memory budget (default: physical memory)");
  cmd->add_flag("--no-prefix-caching", o->no_prefix_caching);
  cmd->add_option("--threads", o->threads, "Compute threads (default: all cores)");
  cmd->callback([o] {
    try {
      set_exit_code(run(*o));
    } catch (const Error& e) {
      std::cerr << "error: " << e.what() << "\n";
      set_exit_code(1);
    }
  });
}

}  // namespace roll::cli
