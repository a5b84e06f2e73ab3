#include "roll/model/tokenizer_trim.h"

#include <fmt/format.h>

#include <map>
#include <string>

#include "roll/core/error.h"

namespace roll::model {
namespace {

std::string merge_result(const nlohmann::json& merge) {
  if (merge.is_array() && merge.size() == 2) return merge[0].get<std::string>() + merge[1].get<std::string>();
  if (merge.is_string()) {
    const auto s = merge.get<std::string>();
    const auto sp = s.find(' ');
    if (sp != std::string::npos) return s.substr(0, sp) + s.substr(sp + 1);
  }
  throw Error(fmt::format("tokenizer.json: merge {} is neither [a, b] nor \"a b\"", merge.dump()));
}

}  // namespace

TrimmedTokenizer trim_tokenizer(const nlohmann::json& tokenizer, const nlohmann::json& tokenizer_config,
                                int64_t vocab) {
  if (!tokenizer.contains("model") || tokenizer["model"].value("type", "") != "BPE")
    throw Error("tokenizer.json: trimming needs a BPE model");
  const auto& vocab_in = tokenizer["model"].at("vocab");
  const auto& merges_in = tokenizer["model"].at("merges");
  const auto regular = static_cast<int64_t>(vocab_in.size());
  if (vocab < 256 || vocab > regular)
    throw Error(fmt::format("--vocab {}: expected 256..{} (the tokenizer's regular vocabulary)", vocab, regular));
  // Kept merges must be exactly the ones that produce ids 256 .. vocab-1, in rank order.
  const int64_t kept_merges = vocab - 256;
  if (static_cast<int64_t>(merges_in.size()) < kept_merges)
    throw Error(fmt::format("tokenizer.json has {} merges, fewer than the {} a vocabulary of {} needs",
                            merges_in.size(), kept_merges, vocab));
  nlohmann::json vocab_out = nlohmann::json::object();
  for (auto it = vocab_in.begin(); it != vocab_in.end(); ++it)
    if (it.value().get<int64_t>() < vocab) vocab_out[it.key()] = it.value();
  if (static_cast<int64_t>(vocab_out.size()) != vocab)
    throw Error(fmt::format("tokenizer.json: ids 0..{} are not all regular tokens ({} found)", vocab - 1,
                            vocab_out.size()));
  nlohmann::json merges_out = nlohmann::json::array();
  for (int64_t r = 0; r < kept_merges; ++r) {
    const std::string token = merge_result(merges_in[r]);
    const auto it = vocab_in.find(token);
    if (it == vocab_in.end() || it->get<int64_t>() != 256 + r)
      throw Error(fmt::format("tokenizer.json: merge {} ({}) does not yield id {}; only tokenizers whose merge r "
                              "creates id 256 + r can be trimmed",
                              r, merges_in[r].dump(), 256 + r));
    merges_out.push_back(merges_in[r]);
  }
  TrimmedTokenizer out;
  out.tokenizer = tokenizer;
  out.tokenizer["model"]["vocab"] = std::move(vocab_out);
  out.tokenizer["model"]["merges"] = std::move(merges_out);
  // Added tokens keep their order and follow the regular ones.
  std::map<int64_t, int64_t> renumbered;
  int64_t next = vocab;
  if (tokenizer.contains("added_tokens")) {
    auto& added = out.tokenizer["added_tokens"];
    for (auto& t : added) {
      const int64_t old_id = t.at("id").get<int64_t>();
      if (old_id < vocab) continue;  // an added token inside the kept range keeps its id
      renumbered[old_id] = next;
      t["id"] = next++;
    }
  }
  out.tokenizer_config = tokenizer_config;
  if (tokenizer_config.contains("added_tokens_decoder")) {
    nlohmann::json dec = nlohmann::json::object();
    for (auto it = tokenizer_config["added_tokens_decoder"].begin(); it != tokenizer_config["added_tokens_decoder"].end();
         ++it) {
      const int64_t old_id = std::stoll(it.key());
      const auto r = renumbered.find(old_id);
      if (r != renumbered.end()) dec[std::to_string(r->second)] = it.value();
      else if (old_id < vocab) dec[it.key()] = it.value();
    }
    out.tokenizer_config["added_tokens_decoder"] = std::move(dec);
  }
  out.vocab_size = next;
  return out;
}

}  // namespace roll::model
