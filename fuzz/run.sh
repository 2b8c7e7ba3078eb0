#!/usr/bin/env bash
# Runs every cargo-fuzz target for a while: fuzz/run.sh [seconds per target, default 30]
#
# cargo fuzz needs nightly features; with the stable toolchain RUSTC_BOOTSTRAP=1 enables them
# and `--sanitizer none` avoids rebuilding the standard library. A crash stops the run with
# its input saved under fuzz/artifacts/<target>/ (replay: cargo fuzz run <target> <file>).
# Prints one line per target: executions, and the corpus size.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_PER_TARGET="${1:-30}"
TARGETS=(webhook slash_commands hive_yml apply_patch gate_output)

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked --quiet
fi

cd "$ROOT"
export RUSTC_BOOTSTRAP=1
cargo fuzz build --sanitizer none --release 2>&1 | tail -n 3 >&2 || {
    echo "fuzz: building the targets failed" >&2
    exit 1
}
for t in "${TARGETS[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    log="$(mktemp)"
    if ! cargo fuzz run --sanitizer none --release "$t" "fuzz/corpus/$t" fuzz/seeds/"$t" -- \
            -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        echo "fuzz: $t found a crash (input in fuzz/artifacts/$t/)" >&2
        exit 1
    fi
    runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')"
    corpus="$(find "fuzz/corpus/$t" -type f | wc -l)"
    echo "fuzz: $t: $runs executions in ${SECONDS_PER_TARGET}s, no crash, corpus $corpus inputs"
    rm -f "$log"
done
