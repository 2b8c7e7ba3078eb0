#!/usr/bin/env bash
# Sustained ingest of this build beside a previous one, in one run (bench/README.md):
#
#   bench/ingest-compare.sh [REV] [-- extra ingest bench options]
#
# Builds `vibeloop` at REV (default: the commit before HEAD) in a worktree of its own, in
# this checkout's target directory (the dependencies are built once for both) and keeps the
# binary as target/compare/vibeloop-<sha>; then runs `cargo bench --bench ingest -- --against`
# it: both builds in turns, three rounds by default, medians at the end.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REV="${1:-HEAD~1}"
[ "$#" -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
SHA="$(git -C "$ROOT" rev-parse --verify "$REV^{commit}")" || { echo "ingest-compare: no commit '$REV'" >&2; exit 2; }
BIN="$ROOT/target/compare/vibeloop-${SHA:0:12}"
if [ ! -x "$BIN" ]; then
    WT="$ROOT/target/compare/src-${SHA:0:12}"
    [ -d "$WT" ] || git -C "$ROOT" worktree add --detach "$WT" "$SHA" >/dev/null
    echo "ingest-compare: building vibeloop at ${SHA:0:12} (once)" >&2
    CARGO_TARGET_DIR="$ROOT/target" cargo build --release --locked --bin vibeloop \
        --manifest-path "$WT/Cargo.toml" >&2
    cp "$ROOT/target/release/vibeloop" "$BIN"
    git -C "$ROOT" worktree remove --force "$WT"
fi
cd "$ROOT"
exec cargo bench --bench ingest -- --against "$BIN" "$@"
