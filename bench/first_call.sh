#!/usr/bin/env bash
# First model call on a big repository: `vibeloop run --ask` and `--plan-only` on a generated
# Rust workspace of 11,000 files and 30,000 commits (10 tags), timed from the command's start
# to the first request that reaches the model endpoint (a stub on 127.0.0.1 that records it and
# answers 500, so the run stops there). Also `git clone --local` of the same repository, for
# scale. Prints a table of medians; asserts nothing.
#
# Usage: bench/first_call.sh [path to the vibeloop binary, default target/debug/vibeloop] [runs, default 3]
# Needs: git, python3, and a Docker engine (or VIBELOOP_SANDBOX=local).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${1:-$ROOT/target/debug/vibeloop}"
RUNS="${2:-3}"
[ -x "$BIN" ] || { echo "bench/first_call.sh: $BIN is missing: cargo build first" >&2; exit 1; }
WORK="$(mktemp -d)"
STUB=""
trap '[ -n "$STUB" ] && kill "$STUB" 2>/dev/null; rm -rf "$WORK"' EXIT

# --- the repository: 110 crates x 100 files, then 30,000 one-file commits -----------------------
REPO="$WORK/ws"
git init -q -b main "$REPO"
python3 - "$REPO" <<'PY'
import os, sys
root = sys.argv[1]
members = []
for c in range(110):
    d = f"{root}/crates/c{c}"
    os.makedirs(d + "/src")
    members.append(f'"crates/c{c}"')
    open(d + "/Cargo.toml", "w").write(f'[package]\nname = "c{c}"\nversion = "0.1.0"\nedition = "2021"\n')
    for m in range(98):
        open(f"{d}/src/m{m}.rs", "w").write("".join(f"pub fn f{i}(x: u32) -> u32 {{ x + {i} }}\n" for i in range(30)))
    open(d + "/src/lib.rs", "w").write("".join(f"pub mod m{m};\n" for m in range(98)))
open(root + "/Cargo.toml", "w").write("[workspace]\nmembers = [" + ", ".join(members) + "]\nresolver = \"2\"\n")
PY
git -C "$REPO" add -A
git -C "$REPO" -c user.name=b -c user.email=b@example.com commit -qm init
python3 - <<'PY' | git -C "$REPO" fast-import --quiet
import sys
w = sys.stdout.write
for i in range(30000):
    data = f"pub fn changed{i}(x: u32) -> u32 {{ x * {i} }}\n"
    w(f"blob\nmark :{i + 1}\ndata {len(data)}\n{data}\n")
    w(f"commit refs/heads/main\ncommitter B <b@example.com> {1700000000 + i} +0000\ndata 8\nc {i:05d}\n")
    if i == 0:
        w("from refs/heads/main^0\n")
    w(f"M 100644 :{i + 1} crates/c{i % 110}/src/extra{(i * 7) % 98}.rs\n\n")
    if i % 3000 == 0:
        w(f"tag v0.{i // 3000}.0\nfrom refs/heads/main\ntagger B <b@example.com> {1700000000 + i} +0000\ndata 3\nv0\n")
PY
git -C "$REPO" reset -q --hard main
FILES=$(git -C "$REPO" ls-files | wc -l)
COMMITS=$(git -C "$REPO" rev-list --count main)

# --- the model endpoint: records the time of each POST -----------------------------------------
LOG="$WORK/calls.log"
PORT_FILE="$WORK/port"
python3 - "$LOG" "$PORT_FILE" <<'PY' &
import http.server, sys, time
log, port_file = sys.argv[1], sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        with open(log, "a") as f:
            f.write(f"{time.time():.3f}\n")
        self.send_response(500); self.end_headers(); self.wfile.write(b'{"error":"bench"}')
    def do_GET(self):
        self.send_response(404); self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(port_file, "w").write(str(s.server_address[1]))
s.serve_forever()
PY
STUB=$!
for _ in $(seq 100); do [ -s "$PORT_FILE" ] && break; sleep 0.05; done
URL="http://127.0.0.1:$(cat "$PORT_FILE")/v1"

# first_call ARGS...: seconds from start to the first POST
first_call() {
    : >"$LOG"
    local start pid
    start=$(date +%s.%N)
    "$BIN" run --repo "$REPO" --llm-base-url "$URL" --llm-api-key bench --timeout-minutes 2 "$@" \
        >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1200); do [ -s "$LOG" ] && break; sleep 0.05; done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    [ -s "$LOG" ] || { echo "no model call within 60 s" >&2; echo 999; return; }
    python3 -c "print(f'{float(open(\"$LOG\").readline()) - $start:.2f}')"
}
clone() {
    local start
    rm -rf "$WORK/clone"
    start=$(date +%s.%N)
    git clone -q --local "$REPO" "$WORK/clone"
    python3 -c "import time; print(f'{time.time() - $start:.2f}')"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

ASK=$(for _ in $(seq "$RUNS"); do first_call --ask "What does crate c1 do?"; done | median)
PLAN=$(for _ in $(seq "$RUNS"); do first_call --goal "Add f31 to c1::m0" --plan-only; done | median)
CLONE=$(for _ in $(seq "$RUNS"); do clone; done | median)

echo "repository: $FILES files, $COMMITS commits (medians of $RUNS runs, $(basename "$BIN"))"
printf '| %-38s | %8s |\n' "measure" "seconds"
printf '| %-38s | %8s |\n' "--------------------------------------" "--------"
printf '| %-38s | %8s |\n' "run --ask: start to first model call" "$ASK"
printf '| %-38s | %8s |\n' "run --plan-only: start to first call" "$PLAN"
printf '| %-38s | %8s |\n' "git clone --local, for scale" "$CLONE"
