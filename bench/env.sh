#!/usr/bin/env bash
# Environments: a Rust crate with a few dozen crates.io dependencies, through `vibeloop gates`
# (no .github/hive.yml: everything detected) — cold setup + first gates, a second ticket on the
# same lockfile, a Builder retry (one source file changed) — against the same `cargo test` run
# natively on a warm checkout. Prints a table; asserts nothing.
#
# Usage: bench/env.sh [path to the vibeloop binary, default target/release/vibeloop]
# Needs: Docker with vibeloop-runner:rust, cargo on the host, and crates.io (fetched at run time).
# VIBELOOP_SANDBOX_CA_BUNDLE defaults to /etc/ssl/certs/ca-certificates.crt when that exists.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${1:-$ROOT/target/release/vibeloop}"
[ -x "$BIN" ] || { echo "bench/env.sh: $BIN is missing: cargo build --release first" >&2; exit 1; }
if [ -z "${VIBELOOP_SANDBOX_CA_BUNDLE:-}" ] && [ -r /etc/ssl/certs/ca-certificates.crt ]; then
    export VIBELOOP_SANDBOX_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# --- the crate ---------------------------------------------------------------------------------
CRATE="$WORK/crate"
mkdir -p "$CRATE/src" "$CRATE/tests"
cat >"$CRATE/Cargo.toml" <<'TOML'
[package]
name = "benchy"
version = "0.1.0"
edition = "2021"

[dependencies]
anyhow = "1"
clap = { version = "4", features = ["derive"] }
regex = "1"
serde = { version = "1", features = ["derive"] }
serde_json = "1"
smallvec = "1"
thiserror = "2"
TOML
cat >"$CRATE/src/lib.rs" <<'RS'
//! A little of each dependency.
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize, PartialEq, clap::Parser)]
pub struct Args {
    #[arg(long)]
    pub pattern: String,
}

#[derive(Debug, thiserror::Error)]
#[error("no match for {0}")]
pub struct NoMatch(pub String);

pub fn words(pattern: &str, text: &str) -> anyhow::Result<smallvec::SmallVec<[String; 4]>> {
    let re = regex::Regex::new(pattern)?;
    let found: smallvec::SmallVec<[String; 4]> =
        re.find_iter(text).map(|m| m.as_str().to_owned()).collect();
    if found.is_empty() {
        return Err(NoMatch(pattern.to_owned()).into());
    }
    Ok(found)
}

pub fn to_json(a: &Args) -> String {
    serde_json::to_string(a).unwrap_or_default()
}
RS
cat >"$CRATE/tests/words.rs" <<'RS'
#[test]
fn finds_words() {
    assert_eq!(benchy::words(r"\w+", "a bc").unwrap().len(), 2);
}

#[test]
fn round_trips() {
    let a = benchy::Args { pattern: "x".into() };
    assert_eq!(benchy::to_json(&a), r#"{"pattern":"x"}"#);
}
RS
(cd "$CRATE" && cargo generate-lockfile -q && git init -q -b main && git add -A \
    && git -c user.name=b -c user.email=b@b commit -qm init)
DEPS="$(grep -c '^name = ' "$CRATE/Cargo.lock")"

# --- through the bot ---------------------------------------------------------------------------
ENVS="$WORK/envs"
gates() { # → "wall-seconds test-gate-seconds setup-line"
    local t0 t1 out
    t0=$(date +%s.%N)
    out="$("$BIN" gates --sandbox docker --repo "$CRATE" --base main --env-dir "$ENVS" --gate test --json 2>&1)" \
        || { echo "$out" >&2; echo "bench/env.sh: the gates failed" >&2; exit 1; }
    t1=$(date +%s.%N)
    local test_ms setup
    test_ms="$(printf '%s' "$out" | sed -n 's/.*"duration": \([0-9]*\).*/\1/p' | head -1)"
    setup="$(printf '%s' "$out" | grep '^setup:' || true)"
    echo "$(echo "$t1 - $t0" | bc) $(echo "scale=2; $test_ms / 1000" | bc) $setup"
}
read -r COLD_WALL COLD_TEST COLD_SETUP <<<"$(gates)"
# The median of three "wall test-gate setup" lines (by the test gate's time): single runs of a
# one-second build vary by a third on a shared 2-CPU machine.
median3() { sort -k2 -n | sed -n 2p; }
read -r WARM_WALL WARM_TEST WARM_SETUP <<<"$(for _ in 1 2 3; do gates; done | median3)"
sed -i 's/re.find_iter(text)/re.find_iter(text.trim())/' "$CRATE/src/lib.rs"
(cd "$CRATE" && git -c user.name=b -c user.email=b@b commit -qam retry)
read -r RETRY_WALL RETRY_TEST RETRY_SETUP <<<"$(gates)"
(cd "$CRATE" && git -c user.name=b -c user.email=b@b reset -q --hard HEAD~1)

# --- natively, on a warm checkout --------------------------------------------------------------
native() { # [checkout, default the crate]
    local t0 t1 dir="${1:-$CRATE}"
    t0=$(date +%s.%N)
    (cd "$dir" && CARGO_TARGET_DIR="$WORK/native-target" cargo test -q >/dev/null 2>&1)
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
}
NATIVE_COLD="$(native)"
NATIVE_WARM="$(native)"
# A second ticket natively: a fresh checkout of the same commit, the same warm target dir.
NATIVE_FRESH="$(for i in 1 2 3; do
    git clone -q "$CRATE" "$WORK/crate2-$i"
    echo "x $(native "$WORK/crate2-$i")"
done | median3 | cut -d' ' -f2)"
sed -i 's/re.find_iter(text)/re.find_iter(text.trim())/' "$CRATE/src/lib.rs"
NATIVE_RETRY="$(native)"

# --- the gap, measured apart ---------------------------------------------------------------------
# The same `cargo test` in the runner image by hand, in the environment the bot made: a fresh
# checkout (as a second ticket's), then again with nothing changed. Timed inside the container,
# so the container's start is not in it; the container's start is timed on its own.
ENV_DIR="$(find "$ENVS" -mindepth 2 -maxdepth 2 -type d ! -name '*.tmp*' | head -1)"
git clone -q "$CRATE" "$WORK/crate3"
chmod -R a+rwX "$WORK/crate3"
IMAGE=vibeloop-runner:rust
in_container() { # → "fresh-seconds no-op-seconds rustc-version"
    local t
    t="$(docker run --rm --network none --cpus 2 -v "$ENV_DIR:/cache" -v "$WORK/crate3:/work" -w /work \
        -e CARGO_HOME=/cache/cargo -e CARGO_TARGET_DIR=/cache/target -e CARGO_NET_OFFLINE=true \
        "$IMAGE" sh -c 't0=$(date +%s.%N); cargo test -q --offline >/dev/null 2>&1; t1=$(date +%s.%N);
            cargo test -q --offline >/dev/null 2>&1; t2=$(date +%s.%N);
            echo "$t0 $t1 $t2 $(rustc --version | cut -d" " -f2)"')"
    read -r t0 t1 t2 v <<<"$t"
    echo "$(echo "$t1 - $t0" | bc) $(echo "$t2 - $t1" | bc) $v"
}
read -r INNER_FRESH INNER_NOOP INNER_RUSTC <<<"$(in_container)"
T0=$(date +%s.%N); docker run --rm --network none "$IMAGE" true; T1=$(date +%s.%N)
CONTAINER_START="$(echo "$T1 - $T0" | bc)"
HOST_RUSTC="$(rustc --version | cut -d' ' -f2)"

printf '\nRust crate, %s packages in Cargo.lock (vibeloop gates --gate test, Docker, setup detected)\n\n' "$DEPS"
printf '%-46s %10s %12s %s\n' "case" "wall (s)" "test gate (s)" "setup"
printf '%-46s %10.2f %12.2f %s\n' "cold: setup + first test gate" "$COLD_WALL" "$COLD_TEST" "$COLD_SETUP"
printf '%-46s %10.2f %12.2f %s\n' "second ticket, same lockfile (median of 3)" "$WARM_WALL" "$WARM_TEST" "$WARM_SETUP"
printf '%-46s %10.2f %12.2f %s\n' "Builder retry, lib.rs changed" "$RETRY_WALL" "$RETRY_TEST" "$RETRY_SETUP"
printf '%-46s %10.2f\n' "native cargo test, cold" "$NATIVE_COLD"
printf '%-46s %10.2f\n' "native cargo test, warm" "$NATIVE_WARM"
printf '%-46s %10.2f\n' "native cargo test, fresh checkout (median of 3)" "$NATIVE_FRESH"
printf '%-46s %10.2f\n' "native cargo test, lib.rs changed" "$NATIVE_RETRY"
printf '\nsecond ticket test gate / native fresh checkout: %.2fx (/ warm no-op: %.2fx); Builder retry / native retry: %.2fx\n' \
    "$(echo "$WARM_TEST / $NATIVE_FRESH" | bc -l)" "$(echo "$WARM_TEST / $NATIVE_WARM" | bc -l)" \
    "$(echo "$RETRY_TEST / $NATIVE_RETRY" | bc -l)"
printf '\nApart: in the container by hand (rustc %s; host rustc %s): fresh checkout %s s, nothing changed %s s; a container start alone %.2f s\n' \
    "$INNER_RUSTC" "$HOST_RUSTC" "$INNER_FRESH" "$INNER_NOOP" "$CONTAINER_START"
