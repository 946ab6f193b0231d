#!/usr/bin/env bash
# Compatibility check: starts the release `augur serve` on a free port and drives it with
# redis-py, redis-cli (including inline commands) and redis-benchmark.
# Needs: redis-tools (redis-cli, redis-benchmark) and python3 with the `redis` package.
# Prints "N passed, N failed" and exits non-zero on any failure.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BIN="${AUGUR_BIN:-$ROOT/target/release/augur}"
if [[ -z "${AUGUR_BIN:-}" ]]; then
    (cd "$ROOT" && cargo build --release -p augur --quiet)
fi
for tool in redis-cli redis-benchmark python3; do
    command -v "$tool" >/dev/null || { echo "missing $tool"; echo "0 passed, 1 failed"; exit 1; }
done
python3 -c 'import redis' 2>/dev/null || { echo "missing python package redis"; echo "0 passed, 1 failed"; exit 1; }

PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
LOG="$(mktemp)"
"$BIN" serve --port "$PORT" --loglevel notice >"$LOG" 2>&1 &
SERVER_PID=$!
cleanup() {
    if kill -0 "$SERVER_PID" 2>/dev/null; then kill "$SERVER_PID" 2>/dev/null || true; fi
    rm -f "$LOG"
}
trap cleanup EXIT

for _ in $(seq 1 100); do
    if redis-cli -p "$PORT" PING 2>/dev/null | grep -q PONG; then break; fi
    sleep 0.05
done

status=0
python3 "$ROOT/tests/compat/compat.py" "$PORT" "$SERVER_PID" || status=$?
if [[ $status -ne 0 ]]; then
    echo "--- server log ---"
    tail -n 30 "$LOG"
fi
exit $status
