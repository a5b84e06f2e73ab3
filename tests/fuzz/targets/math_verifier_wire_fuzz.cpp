// The byte stream between a worker and its roll-math-verifier helper: request frames as the helper
// reads them, response frames as the worker reads them.
#include "../fuzz_target.h"
#include "roll/reward/math/math_verifier_protocol.h"

ROLL_FUZZ_TARGET(math_verifier_wire) {
  namespace wire = roll::reward::wire;
  std::string_view rest = bytes;
  while (rest.size() >= wire::kRequestHeaderBytes) {
    const auto header = wire::decode_request_header(rest.data());
    if (!header) break;
    rest.remove_prefix(wire::kRequestHeaderBytes);
    const size_t body = size_t{header->gold_bytes} + header->answer_bytes;
    if (body > rest.size()) break;
    rest.remove_prefix(body);
  }
  std::string_view responses = bytes;
  while (responses.size() >= wire::kResponseHeaderBytes) {
    const auto header = wire::decode_response_header(responses.data());
    if (!header) break;
    responses.remove_prefix(wire::kResponseHeaderBytes);
    if (header->detail_bytes > responses.size()) break;
    responses.remove_prefix(header->detail_bytes);
  }
}
