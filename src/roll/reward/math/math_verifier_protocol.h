#pragma once
// Wire format between MathVerifier (worker side) and the roll-math-verifier process: one request,
// one response, over a Unix socket pair that is the helper's stdin/stdout. Host byte order (both
// ends are the same machine and build).
//   request : u32 kRequestMagic, u8 op, u8 form, u32 gold_len, u32 answer_len, gold, answer
//   response: u32 kResponseMagic, u8 verdict, u32 detail_len, detail
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace roll::reward::wire {

inline constexpr std::uint32_t kRequestMagic = 0x3151564d;   // "MVQ1"
inline constexpr std::uint32_t kResponseMagic = 0x3152564d;  // "MVR1"
inline constexpr std::uint32_t kMaxFieldBytes = 64u << 20;   // larger requests are refused by the sender

enum Op : std::uint8_t {
  kVerify = 'V',
  kPing = 'P',
  kHangForTest = 'H',   // the helper spins forever (timeout/kill/restart tests)
  kCrashForTest = 'C',  // the helper aborts (crash/restart tests)
};

inline constexpr std::size_t kRequestHeaderBytes = 4 + 1 + 1 + 4 + 4;
inline constexpr std::size_t kResponseHeaderBytes = 4 + 1 + 4;

inline void put_u32(std::string& out, std::uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
inline std::uint32_t get_u32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

struct RequestHeader {
  Op op;
  std::uint8_t form;
  std::uint32_t gold_bytes;
  std::uint32_t answer_bytes;
};

struct ResponseHeader {
  std::uint8_t verdict;
  std::uint32_t detail_bytes;
};

inline constexpr std::uint8_t kMaxVerdict = 7;
inline constexpr std::uint32_t kMaxDetailBytes = 4096;

// nullopt: not a request (wrong magic or a field over kMaxFieldBytes); the helper then exits.
inline std::optional<RequestHeader> decode_request_header(const char* header) {
  if (get_u32(header) != kRequestMagic) return std::nullopt;
  RequestHeader h{static_cast<Op>(header[4]), static_cast<std::uint8_t>(header[5]), get_u32(header + 6),
                  get_u32(header + 10)};
  if (h.gold_bytes > kMaxFieldBytes || h.answer_bytes > kMaxFieldBytes) return std::nullopt;
  return h;
}

// nullopt: not a response (wrong magic, unknown verdict, detail over kMaxDetailBytes); the worker
// then kills and restarts the helper.
inline std::optional<ResponseHeader> decode_response_header(const char* header) {
  if (get_u32(header) != kResponseMagic) return std::nullopt;
  ResponseHeader h{static_cast<std::uint8_t>(header[4]), get_u32(header + 5)};
  if (h.verdict > kMaxVerdict || h.detail_bytes > kMaxDetailBytes) return std::nullopt;
  return h;
}

inline std::string encode_request(Op op, std::uint8_t form, std::string_view gold, std::string_view answer) {
  std::string out;
  out.reserve(kRequestHeaderBytes + gold.size() + answer.size());
  put_u32(out, kRequestMagic);
  out += static_cast<char>(op);
  out += static_cast<char>(form);
  put_u32(out, static_cast<std::uint32_t>(gold.size()));
  put_u32(out, static_cast<std::uint32_t>(answer.size()));
  out.append(gold);
  out.append(answer);
  return out;
}

inline std::string encode_response(std::uint8_t verdict, std::string_view detail) {
  if (detail.size() > kMaxDetailBytes) detail = detail.substr(0, kMaxDetailBytes);
  std::string out;
  put_u32(out, kResponseMagic);
  out += static_cast<char>(verdict);
  put_u32(out, static_cast<std::uint32_t>(detail.size()));
  out.append(detail);
  return out;
}

}  // namespace roll::reward::wire
