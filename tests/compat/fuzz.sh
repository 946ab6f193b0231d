#!/usr/bin/env bash
# Argument fuzzing of the release `augur serve` (tests/compat/fuzz_commands.py): every
# command and subcommand with random and grammar-shaped arguments (the grammar from a
# Debian redis-server's COMMAND DOCS, started here on a free port), in RESP2 and RESP3,
# with fixed seeds. Fails on a dropped connection, a malformed or late reply, a changed
# sentinel key or a panic in the server's log.
#   bash tests/compat/fuzz.sh [CALLS=50000]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BIN="${AUGUR_BIN:-$ROOT/target/release/augur}"
CALLS=${1:-50000}
[[ -n "${AUGUR_BIN:-}" ]] || (cd "$ROOT" && cargo build --release -p augur --quiet)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
DOCS_PORT=$(free_port)
LOG="$(mktemp)"
"$BIN" serve --port "$PORT" --maxmemory 8mb --maxmemory-policy volatile-lru >"$LOG" 2>&1 &
SERVER_PID=$!
redis-server --port "$DOCS_PORT" --save '' --appendonly no --daemonize no >/dev/null 2>&1 &
REDIS_PID=$!
cleanup() {
    kill "$SERVER_PID" "$REDIS_PID" 2>/dev/null || true
    rm -f "$LOG"
}
trap cleanup EXIT
for _ in $(seq 1 100); do
    redis-cli -p "$PORT" PING 2>/dev/null | grep -q PONG &&
        redis-cli -p "$DOCS_PORT" PING 2>/dev/null | grep -q PONG && break
    sleep 0.05
done
status=0
for run in "1" "2" "3 RESP3" "4 RESP3"; do
    set -- $run
    if ! env ${2:+RESP3=1} LOG="$LOG" DOCS_PORT="$DOCS_PORT" \
        python3 "$ROOT/tests/compat/fuzz_commands.py" "$PORT" "$CALLS" "$1"; then
        status=1
        break
    fi
done
if [[ $status -ne 0 ]]; then
    echo "--- server log ---"
    tail -n 40 "$LOG"
fi
exit $status
