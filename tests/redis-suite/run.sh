#!/usr/bin/env bash
# Runs Redis 7.0.15's own test suite in external mode against a release build of
# `augur serve` (and, with --compare, against Debian's redis-server on the same files),
# with the suite's files unchanged. Tests Augur is known not to pass are listed, each
# under the reason why, in tests/redis-suite/skip.txt; every other test of the listed
# units must pass, or this script fails.
#
#   bash tests/redis-suite/run.sh [--compare] [--suite DIR] [unit/type/string ...]
#
# Prints one line per unit: passed / failed / skipped counts (and Redis's with
# --compare), then the names of failing tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

COMPARE=0
SUITE=${REDIS_SUITE:-$ROOT/../shared/redis-tests-7.0.15}
UNITS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --compare) COMPARE=1 ;;
    --suite) SUITE=$2; shift ;;
    *) UNITS+=("$1") ;;
  esac
  shift
done
if [ ${#UNITS[@]} -eq 0 ]; then
  mapfile -t UNITS < <(grep -v '^#' tests/redis-suite/units.txt | grep -v '^\s*$')
fi
if [ ! -d "$SUITE" ]; then
  # A fresh clone without ../shared: take tests/ and runtest from Redis 7.0.15's release
  # tarball (BSD-3-Clause), checked against its published SHA-256, cached under target/.
  CACHE=$ROOT/target/redis-7.0.15-tests
  if [ ! -x "$CACHE/runtest" ]; then
    echo "Redis test suite not found at $SUITE (set REDIS_SUITE); downloading Redis 7.0.15's from download.redis.io"
    command -v curl >/dev/null || { echo "curl is needed to download it"; exit 2; }
    mkdir -p "$CACHE"
    curl -fsSL -o "$CACHE/redis.tar.gz" https://download.redis.io/releases/redis-7.0.15.tar.gz
    echo "98066f5363504b26c34dd20fbcc3c957990d764cdf42576c836fc021073f4341  $CACHE/redis.tar.gz" | sha256sum -c --quiet \
      || { echo "redis-7.0.15.tar.gz: checksum mismatch"; rm -rf "$CACHE"; exit 2; }
    tar -xzf "$CACHE/redis.tar.gz" -C "$CACHE" --strip-components=1 redis-7.0.15/tests redis-7.0.15/runtest redis-7.0.15/COPYING
    rm "$CACHE/redis.tar.gz"
  fi
  SUITE=$CACHE
fi
command -v tclsh >/dev/null || { echo "tclsh is needed (apt-get install tcl)"; exit 2; }

AUGUR=${AUGUR_BIN:-$ROOT/target/release/augur}
[ -x "$AUGUR" ] || cargo build --release -p augur
WORK=$(mktemp -d)
trap 'kill $(jobs -p) $(cat "$WORK"/*.pid 2>/dev/null) 2>/dev/null || true; rm -rf "$WORK"' EXIT
cp -r "$SUITE" "$WORK/rt"
grep -v '^#' tests/redis-suite/skip.txt | grep -v '^\s*$' > "$WORK/skip" || true

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_server NAME: starts a fresh server (augur or Debian's redis-server) on a free port,
# prints the port and leaves its pid in $WORK/NAME.pid.
start_server() {
  local name=$1 port
  port=$(free_port)
  if [ "$name" = augur ]; then
    "$AUGUR" serve --port "$port" --bind 127.0.0.1 >>"$WORK/augur.out" 2>&1 &
  else
    redis-server --port "$port" --save '' --appendonly no --daemonize no >>"$WORK/redis.out" 2>&1 &
  fi
  echo $! >"$WORK/$name.pid"
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  echo "$port"
}

stop_server() {
  local pid
  pid=$(cat "$WORK/$1.pid" 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$WORK/$1.pid"
}

# run_units NAME: runs every unit against a server of its own, as the suite does when it
# starts the servers itself (in external mode units share whatever the one server is left
# with: unit/type/set raises proto-max-bulk-len to 10 GB and never restores it, and
# unit/protocol then waits for a 1 GB bulk it expects refused, on Redis as on Augur);
# writes NAME.UNIT.log.
run_units() {
  local name=$1 port skip=()
  [ "$name" = augur ] && skip=(--skipfile "$WORK/skip")
  for u in "${UNITS[@]}"; do
    local log="$WORK/$name.${u//\//_}.log"
    port=$(start_server "$name")
    (cd "$WORK/rt" && timeout 600 ./runtest --host 127.0.0.1 --port "$port" --single "$u" \
      --clients 1 --tags -needs:debug --tags -needs:repl --durable --timeout 120 \
      "${skip[@]}" >"$log" 2>&1) || true
    sed -i "s/\x1b\[[0-9;]*m//g" "$log"
    stop_server "$name"
  done
}

counts() { # log -> "passed failed skipped"
  local ok err skp
  ok=$(grep -c '^\[ok\]' "$1" || true)
  err=$(grep -cE '^\[(err|exception)\]' "$1" || true)
  skp=$(grep -c '^\[skip\]' "$1" || true)
  # A unit that did not run to its end counts as a failure even if some tests passed:
  # the suite's own --timeout (no progress for 120 s, e.g. a script left busy) prints
  # [TIMEOUT] and stops without an [err] line, and `timeout 600` kills it silently.
  if grep -q '^\[TIMEOUT\]' "$1" || ! grep -qE 'All tests passed|\[err\]|\[exception\]' "$1"; then
    err=$((err + 1))
  fi
  echo "$ok $err $skp"
}

run_units augur
[ $COMPARE = 1 ] && run_units redis

status=0
printf '%-28s %8s %8s %8s' unit passed failed skipped
[ $COMPARE = 1 ] && printf ' | %12s %12s' redis-passed redis-failed
echo
for u in "${UNITS[@]}"; do
  read -r ok err skp < <(counts "$WORK/augur.${u//\//_}.log")
  printf '%-28s %8s %8s %8s' "$u" "$ok" "$err" "$skp"
  if [ $COMPARE = 1 ]; then
    read -r rok rerr _ < <(counts "$WORK/redis.${u//\//_}.log")
    printf ' | %12s %12s' "$rok" "$rerr"
  fi
  echo
  [ "$err" -gt 0 ] && status=1
done
for u in "${UNITS[@]}"; do
  log="$WORK/augur.${u//\//_}.log"
  if grep -qE '^\[(err|exception)\]' "$log"; then
    echo "--- $u: failing tests"
    grep -E '^\[(err|exception)\]' "$log" | sed 's/^/  /'
  elif ! grep -qE 'All tests passed|\[err\]' "$log" || grep -q '^\[TIMEOUT\]' "$log"; then
    echo "--- $u: the file did not run to its end (hung, timed out or crashed)"
    tail -20 "$log" | sed 's/^/  /'
  fi
done
[ -n "${KEEP_LOGS:-}" ] && cp -r "$WORK" "$KEEP_LOGS"
exit $status
