// tokenizer.json and tokenizer_config.json (parts 1 and 2), then a text (part 3) encoded and decoded.
#include "../fuzz_target.h"
#include "roll/model/tokenizer.h"

ROLL_FUZZ_TARGET(tokenizer) {
  const auto parts = roll::fuzz::split_parts(bytes, 3);
  const std::string tokenizer = roll::fuzz::write_scratch("tok/tokenizer.json", parts[0]);
  const std::string config = roll::fuzz::write_scratch("tok/tokenizer_config.json", parts[1]);
  auto tok = roll::model::Tokenizer::from_files(tokenizer, config);
  const auto ids = tok.encode(parts[2]);
  (void)tok.decode(ids);
  (void)tok.decode(ids, /*skip_special_tokens=*/true);
}
