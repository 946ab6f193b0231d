# Shared helpers for the bench/ scripts (sourced, not run).
# Servers are started on loopback ports, each in its own temp dir, and killed on exit.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AUGUR="${AUGUR:-$ROOT/target/release/augur}"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

build_augur() {
  (cd "$ROOT" && cargo build --release -q -p augur)
}

# wait_port PORT: until something answers PING there (redis protocol).
wait_port() {
  for _ in $(seq 1 100); do
    redis-cli -p "$1" ping >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server on port $1 did not come up" >&2
  return 1
}

# start_redis PORT [extra redis-server args...]; sets LAST_PID
start_redis() {
  local port=$1; shift
  local dir; dir=$(mktemp -d)
  (cd "$dir" && exec redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no "$@" >"$dir/log" 2>&1) &
  LAST_PID=$!; PIDS+=("$LAST_PID")
  wait_port "$port"
}

# start_augur PORT [extra augur serve flags...]; sets LAST_PID
start_augur() {
  local port=$1; shift
  "$AUGUR" serve --port "$port" --bind 127.0.0.1 "$@" >"/tmp/augur-bench-$port.log" 2>&1 &
  LAST_PID=$!; PIDS+=("$LAST_PID")
  wait_port "$port"
}

# start_memcached PORT MEGABYTES; sets LAST_PID
start_memcached() {
  memcached -p "$1" -l 127.0.0.1 -U 0 -m "$2" -u root >/dev/null 2>&1 &
  LAST_PID=$!; PIDS+=("$LAST_PID")
  sleep 0.5
}

rss_bytes() { awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$1/status"; }
hwm_bytes() { awk '/^VmHWM:/ {print $2 * 1024}' "/proc/$1/status"; }
info_field() { redis-cli -p "$1" info "$2" | tr -d '\r' | awk -F: -v k="$3" '$1 == k {print $2}'; }
