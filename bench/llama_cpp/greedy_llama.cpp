// Greedy continuations from llama.cpp, the reference for bench/llama_cpp/greedy_agreement.py.
//
//   greedy_llama MODEL.gguf N_NEW THREADS < prompts.jsonl > out.jsonl
//
// Each input line is {"id": any, "prompt_token_ids": [...]}; each output line
// {"id", "token_ids": [...], "margins": [...], "tops": [...]}: the argmax token of every step, the
// gap between its logit and the runner-up's, and its logit (the gap against the logits' scale
// decides whether another fp32 summation order could pick another token). The KV cache is fp32 (llama.cpp's default is fp16) and flash attention off, so
// that both engines compute in fp32 throughout. Built by greedy_agreement.sh against the
// llama.cpp that compare.sh builds.
#include <llama.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace {

// The minimal JSON this tool reads: the "id" value as text and the integers of "prompt_token_ids".
bool parse_line(const std::string& line, std::string& id, std::vector<llama_token>& ids) {
  const auto idk = line.find("\"id\"");
  const auto pk = line.find("\"prompt_token_ids\"");
  if (idk == std::string::npos || pk == std::string::npos) return false;
  auto v = line.find(':', idk) + 1;
  while (line[v] == ' ') ++v;
  auto end = v;
  if (line[v] == '"') end = line.find('"', v + 1) + 1;
  else while (end < line.size() && line[end] != ',' && line[end] != '}') ++end;
  id = line.substr(v, end - v);
  auto b = line.find('[', pk), e = line.find(']', b);
  ids.clear();
  for (size_t i = b + 1; i < e;) {
    while (i < e && (line[i] == ' ' || line[i] == ',')) ++i;
    if (i >= e) break;
    size_t used = 0;
    ids.push_back(static_cast<llama_token>(std::stol(line.substr(i, e - i), &used)));
    i += used;
  }
  return !ids.empty();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: greedy_llama MODEL.gguf N_NEW THREADS < prompts.jsonl\n");
    return 2;
  }
  const int n_new = std::atoi(argv[2]), threads = std::atoi(argv[3]);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) {
    std::fprintf(stderr, "cannot load %s\n", argv[1]);
    return 1;
  }
  const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  std::string line;
  while (std::getline(std::cin, line)) {
    std::string id;
    std::vector<llama_token> ids;
    if (!parse_line(line, id, ids)) continue;
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = static_cast<uint32_t>(ids.size() + n_new + 16);
    cp.n_batch = cp.n_ctx;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.type_k = GGML_TYPE_F32;
    cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) {
      std::fprintf(stderr, "cannot create a context\n");
      return 1;
    }
    std::vector<llama_token> out;
    std::vector<float> margins, tops;
    std::vector<llama_token> feed = ids;
    for (int step = 0; step < n_new; ++step) {
      if (llama_decode(ctx, llama_batch_get_one(feed.data(), static_cast<int32_t>(feed.size()))) != 0) {
        std::fprintf(stderr, "llama_decode failed at step %d\n", step);
        return 1;
      }
      const float* logits = llama_get_logits_ith(ctx, -1);
      int best = 0, second = 1;
      if (logits[second] > logits[best]) std::swap(best, second);
      for (int t = 2; t < vocab; ++t) {
        if (logits[t] > logits[best]) second = best, best = t;
        else if (logits[t] > logits[second]) second = t;
      }
      out.push_back(best);
      margins.push_back(logits[best] - logits[second]);
      tops.push_back(logits[best]);
      feed.assign(1, best);
    }
    std::printf("{\"id\": %s, \"token_ids\": [", id.c_str());
    for (size_t i = 0; i < out.size(); ++i) std::printf("%s%d", i ? ", " : "", out[i]);
    std::printf("], \"margins\": [");
    for (size_t i = 0; i < margins.size(); ++i) std::printf("%s%.6g", i ? ", " : "", margins[i]);
    std::printf("], \"tops\": [");
    for (size_t i = 0; i < tops.size(); ++i) std::printf("%s%.6g", i ? ", " : "", tops[i]);
    std::printf("]}\n");
    std::fflush(stdout);
    llama_free(ctx);
  }
  llama_model_free(model);
  return 0;
}
