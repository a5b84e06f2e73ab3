# shellcheck shell=bash
# Shared helpers for scripts/*. Source it after `set -euo pipefail`; it sets ROLL_ROOT
# (the repository root, found from this file's location) and cds there.
export ROLL_CALLER_PWD="$PWD"   # where the user ran the script (for relative path arguments)
ROLL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROLL_ROOT" || exit 1

roll_script="$(basename "$0")"
log()  { printf '[%s] %s\n' "$roll_script" "$*"; }
warn() { printf '[%s] warning: %s\n' "$roll_script" "$*" >&2; }
die()  { printf '[%s] error: %s\n' "$roll_script" "$*" >&2; exit 1; }

# Wall-clock seconds since the epoch, with a fraction (bash 5 EPOCHREALTIME).
now() { printf '%s' "${EPOCHREALTIME:-$(date +%s.%N)}"; }
# elapsed START -> seconds with one decimal
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# Prints the calling script's header comment (line 2 up to the first non-comment line).
usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; }
