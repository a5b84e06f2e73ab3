// Tokenizer encode throughput on deterministic mixed text (English prose, Chinese, code,
// numbers, emoji, whitespace runs, chat markup), with an empty merge cache (cold) and a filled
// one (warm), one thread and encode_batch over all threads. Prints JSON lines.
//
//   bench_tokenizer [--mb 4] [--dir third_party/assets/qwen3] [--repeat 3] [--smoke]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "roll/model/tokenizer.h"

using roll::model::TokenId;
using roll::model::Tokenizer;

namespace {

struct Rng {  // splitmix64: the same text on every machine
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
  template <typename T>
  const T& pick(const std::vector<T>& v) { return v[below(v.size())]; }
};

const std::vector<std::string> kWords = {
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "was", "on", "be", "by", "this",
    "are", "from", "at", "or", "an", "which", "have", "not", "they", "their", "has", "model", "policy",
    "reward", "gradient", "training", "learning", "value", "function", "advantage", "sample", "response",
    "prompt", "token", "sequence", "batch", "worker", "cluster", "device", "memory", "update", "step",
    "reinforcement", "optimization", "distribution", "probability", "entropy", "baseline", "estimate",
    "however", "therefore", "because", "between", "different", "important", "example", "problem", "answer",
    "question", "solution", "compute", "result", "number", "equation", "variable", "Alice", "Bob", "Paris",
    "Hangzhou", "January", "Transformer", "attention", "embedding", "don't", "it's", "we're", "they've"};

// Common Chinese characters; runs of them form long \p{L}+ pre-tokens.
const std::string kHanzi =
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后"
    "多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还"
    "因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结"
    "解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级"
    "少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领"
    "七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每";
const std::vector<std::string> kZhPunct = {"，", "。", "、", "；", "：", "？", "！", "“", "”", "（", "）"};
const std::vector<std::string> kEmoji = {"😀", "🚀", "👍🏽", "🎉", "❤️", "🤖", "✅", "🔥", "👨‍💻", "🇨🇳"};
const std::vector<std::string> kIdents = {"x", "y", "idx", "value", "result", "buffer", "count", "total",
                                          "logits", "mask", "tokens", "reward", "advantages", "kl_coef"};

std::string hanzi(Rng& r, int chars) {
  std::string s;
  const size_t n = kHanzi.size() / 3;
  for (int i = 0; i < chars; ++i) s.append(kHanzi, 3 * r.below(n), 3);
  return s;
}

std::string english(Rng& r) {
  std::string s;
  const int sentences = 3 + static_cast<int>(r.below(6));
  for (int k = 0; k < sentences; ++k) {
    const int words = 6 + static_cast<int>(r.below(14));
    for (int w = 0; w < words; ++w) {
      std::string word = r.pick(kWords);
      if (w == 0) word[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(word[0])));
      if (r.below(25) == 0) word = std::to_string(r.below(100000));
      s += word;
      s += w + 1 == words ? (r.below(4) == 0 ? "? " : ". ") : (r.below(9) == 0 ? ", " : " ");
    }
  }
  return s + "\n\n";
}

std::string chinese(Rng& r) {
  std::string s;
  const int clauses = 3 + static_cast<int>(r.below(8));
  for (int k = 0; k < clauses; ++k) {
    s += hanzi(r, 4 + static_cast<int>(r.below(18)));
    if (r.below(6) == 0) s += std::to_string(r.below(2030));
    s += r.pick(kZhPunct);
  }
  return s + "\n";
}

std::string code(Rng& r) {
  std::string s = "def " + r.pick(kIdents) + "_" + std::to_string(r.below(100)) + "(" + r.pick(kIdents) + ", " +
                  r.pick(kIdents) + "=None):\n";
  const int lines = 3 + static_cast<int>(r.below(8));
  for (int k = 0; k < lines; ++k) {
    const std::string indent(4 * (1 + r.below(3)), ' ');
    switch (r.below(4)) {
      case 0: s += indent + r.pick(kIdents) + " = " + r.pick(kIdents) + "[" + std::to_string(r.below(64)) + "] * 0." + std::to_string(r.below(1000)) + "\n"; break;
      case 1: s += indent + "if " + r.pick(kIdents) + " >= " + std::to_string(r.below(4096)) + ":\n"; break;
      case 2: s += indent + "for i in range(len(" + r.pick(kIdents) + ")):  # " + r.pick(kWords) + "\n"; break;
      default: s += indent + "return {\"" + r.pick(kIdents) + "\": " + r.pick(kIdents) + ".sum(dim=-1)}\n"; break;
    }
  }
  return s + "\n";
}

std::string misc(Rng& r) {
  std::string s = "<|im_start|>user\n";
  s += r.pick(kWords) + " " + r.pick(kEmoji) + " " + r.pick(kWords) + r.pick(kEmoji) + "\t\t" +
       std::to_string(r.next() % 1000000007) + "   " + std::string(1 + r.below(12), ' ') + "\n";
  s += "<|im_end|>\n<|im_start|>assistant\n<think>\n" + hanzi(r, 3) + " " + r.pick(kWords) + "\n</think>\n\n";
  s += "$\\frac{" + std::to_string(r.below(100)) + "}{" + std::to_string(1 + r.below(100)) + "}$<|im_end|>\n";
  return s;
}

// Documents of ~2-6 KB until `bytes` is reached: 45% English, 20% Chinese, 25% code, 10% chat markup.
std::vector<std::string> make_corpus(size_t bytes) {
  Rng r{20240601};
  std::vector<std::string> docs;
  size_t total = 0;
  while (total < bytes) {
    std::string doc;
    const size_t target = 2048 + r.below(4096);
    while (doc.size() < target) {
      const size_t k = r.below(20);
      doc += k < 9 ? english(r) : k < 13 ? chinese(r) : k < 18 ? code(r) : misc(r);
    }
    total += doc.size();
    docs.push_back(std::move(doc));
  }
  return docs;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU time of the calling thread: on a shared machine, less disturbed by other processes than
// wall time (single-thread runs report both).
double thread_cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void emit(const char* cache, int threads, size_t bytes, size_t tokens, double seconds, size_t cache_entries,
          double cpu_seconds = 0) {
  std::string cpu;
  if (cpu_seconds > 0) {
    char buf[96];
    std::snprintf(buf, sizeof buf, ",\"cpu_seconds\":%.4f,\"cpu_tokens_per_s\":%.0f", cpu_seconds, tokens / cpu_seconds);
    cpu = buf;
  }
  std::printf(
      "{\"bench\":\"tokenizer_encode\",\"cache\":\"%s\",\"threads\":%d,\"mb\":%.3f,\"tokens\":%zu,"
      "\"seconds\":%.4f,\"tokens_per_s\":%.0f,\"mb_per_s\":%.2f,\"cache_entries\":%zu%s}\n",
      cache, threads, bytes / 1e6, tokens, seconds, tokens / seconds, bytes / 1e6 / seconds, cache_entries, cpu.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  double mb = 4;
  int repeat = 3;
  std::string dir = std::string(ROLL_SOURCE_DIR) + "/third_party/assets/qwen3";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mb" && i + 1 < argc) mb = std::atof(argv[++i]);
    else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (a == "--smoke") mb = 0.2, repeat = 1;
    else {
      std::fprintf(stderr, "usage: %s [--mb N] [--dir tokenizer_dir] [--repeat N] [--smoke]\n", argv[0]);
      return 2;
    }
  }

  // The machine's state: wall times on a shared machine move with its load; CPU times less so.
  double load1 = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load1) != 1) load1 = -1;
    std::fclose(f);
  }
  std::printf("{\"bench\":\"tokenizer_env\",\"hardware_threads\":%u,\"loadavg_1m\":%.2f}\n",
              std::thread::hardware_concurrency(), load1);

  double t0 = now_s();
  Tokenizer tok = [&] {
    try {
      return Tokenizer::from_dir(dir);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      std::exit(1);
    }
  }();
  std::printf("{\"bench\":\"tokenizer_load\",\"seconds\":%.3f,\"vocab_size\":%d}\n", now_s() - t0, tok.vocab_size());

  const auto docs = make_corpus(static_cast<size_t>(mb * 1e6));
  size_t bytes = 0;
  for (const auto& d : docs) bytes += d.size();

  // One thread: best of `repeat` runs, the cache cleared before each cold run.
  double cold = 1e30, warm = 1e30, cold_cpu = 1e30, warm_cpu = 1e30;
  size_t tokens = 0, entries = 0;
  for (int k = 0; k < repeat; ++k) {
    tok.clear_cache();
    t0 = now_s();
    const double c0 = thread_cpu_s();
    size_t n = 0;
    for (const auto& d : docs) n += tok.encode(d, false).size();
    cold_cpu = std::min(cold_cpu, thread_cpu_s() - c0);
    cold = std::min(cold, now_s() - t0);
    tokens = n;
    entries = tok.cache_entries();
  }
  emit("cold", 1, bytes, tokens, cold, entries, cold_cpu);
  for (int k = 0; k < repeat; ++k) {
    t0 = now_s();
    const double c0 = thread_cpu_s();
    size_t n = 0;
    for (const auto& d : docs) n += tok.encode(d, false).size();
    warm_cpu = std::min(warm_cpu, thread_cpu_s() - c0);
    warm = std::min(warm, now_s() - t0);
  }
  emit("warm", 1, bytes, tokens, warm, tok.cache_entries(), warm_cpu);

  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (threads > 1) {
    double cold_b = 1e30, warm_b = 1e30;
    for (int k = 0; k < repeat; ++k) {
      tok.clear_cache();
      t0 = now_s();
      tok.encode_batch(docs, false, threads);
      cold_b = std::min(cold_b, now_s() - t0);
    }
    emit("cold", threads, bytes, tokens, cold_b, tok.cache_entries());
    for (int k = 0; k < repeat; ++k) {
      t0 = now_s();
      tok.encode_batch(docs, false, threads);
      warm_b = std::min(warm_b, now_s() - t0);
    }
    emit("warm", threads, bytes, tokens, warm_b, tok.cache_entries());
  }

  // Decode of everything encoded (ByteLevel decoder).
  std::vector<std::vector<TokenId>> ids = tok.encode_batch(docs, false, threads);
  t0 = now_s();
  size_t out_bytes = 0;
  for (const auto& v : ids) out_bytes += tok.decode(v).size();
  const double dt = now_s() - t0;
  std::printf("{\"bench\":\"tokenizer_decode\",\"threads\":1,\"tokens\":%zu,\"seconds\":%.4f,\"tokens_per_s\":%.0f,"
              "\"mb_per_s\":%.2f}\n",
              tokens, dt, tokens / dt, out_bytes / 1e6 / dt);
  return 0;
}
