#!/usr/bin/env bash
# Runs units of Redis 7.0.15's suite in its own-server mode: the harness starts a
# server per test group from its config (tests/assets/default.conf plus the test's
# overrides) instead of using one external server. Units whose tests are all tagged
# external:skip (unit/acl, unit/acl-v2, unit/auth) run only this way; run.sh's
# external mode runs none of their tests, on Redis or on Augur.
#
#   bash tests/redis-suite/run-spawn.sh [--compare] unit/acl unit/acl-v2 unit/auth
#
# For Augur, src/redis-server is tests/redis-suite/augur-as-redis-server.sh; with
# --compare the same units run on Debian's redis-server. Tests listed in skip.txt are
# skipped on Augur. Prints one line per unit (passed failed skipped, and Redis's).
# SUITE_BASEPORT / SUITE_PORTCOUNT keep the spawned servers in a port range (the
# harness's own port is the 32 below it).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
COMPARE=0
SUITE=${REDIS_SUITE:-$ROOT/../shared/redis-tests-7.0.15}
UNITS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --compare) COMPARE=1 ;;
    *) UNITS+=("$1") ;;
  esac
  shift
done
[ ${#UNITS[@]} -gt 0 ] || { echo "usage: $0 [--compare] unit/acl ..."; exit 2; }
command -v tclsh >/dev/null || { echo "tclsh is needed (apt-get install tcl)"; exit 2; }
export AUGUR_BIN=${AUGUR_BIN:-$ROOT/target/release/augur}
[ -x "$AUGUR_BIN" ] || cargo build --release -p augur
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The parameters Augur's config file accepts (config.rs PARAMS).
export AUGUR_PARAMS=$WORK/params
sed -n '/^pub const PARAMS/,/^];/p' crates/augur-server/src/config.rs \
  | sed -n 's/^ *"\([a-z0-9-]*\)",$/\1/p' > "$AUGUR_PARAMS"
grep -v '^#' tests/redis-suite/skip.txt | grep -v '^\s*$' > "$WORK/skip" || true

run() { # NAME SERVER-BINARY
  local name=$1 bin=$2 skip=()
  [ "$name" = augur ] && skip=(--skipfile "$WORK/skip")
  rm -rf "$WORK/rt" && cp -r "$SUITE" "$WORK/rt" && mkdir -p "$WORK/rt/src"
  ln -s "$bin" "$WORK/rt/src/redis-server"
  ln -s "$(command -v redis-cli)" "$WORK/rt/src/redis-cli"
  for u in "${UNITS[@]}"; do
    local log="$WORK/$name.${u//\//_}.log"
    (cd "$WORK/rt" && timeout 900 ./runtest --single "$u" --clients 1 \
      --baseport "${SUITE_BASEPORT:-21111}" --portcount "${SUITE_PORTCOUNT:-8000}" \
      --tags -needs:debug --tags -needs:repl --durable --timeout 120 \
      "${skip[@]}" >"$log" 2>&1) || true
    sed -i "s/\x1b\[[0-9;]*m//g" "$log"
    if [ -n "${KEEP_LOGS:-}" ]; then mkdir -p "$KEEP_LOGS" && cp "$log" "$KEEP_LOGS/"; fi
  done
}

counts() {
  local ok err skp
  ok=$(grep -c '^\[ok\]' "$1" || true)
  err=$(grep -cE '^\[(err|exception)\]' "$1" || true)
  skp=$(grep -c '^\[skip\]' "$1" || true)
  if ! grep -qE 'All tests passed|\[ok\]|\[err\]' "$1"; then err=$((err + 1)); fi
  echo "$ok $err $skp"
}

run augur "$ROOT/tests/redis-suite/augur-as-redis-server.sh"
[ $COMPARE = 1 ] && run redis "$(command -v redis-server)"
status=0
printf '%-20s %8s %8s %8s' unit passed failed skipped
[ $COMPARE = 1 ] && printf ' | %12s %12s' redis-passed redis-failed
echo
for u in "${UNITS[@]}"; do
  read -r ok err skp < <(counts "$WORK/augur.${u//\//_}.log")
  printf '%-20s %8s %8s %8s' "$u" "$ok" "$err" "$skp"
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
  elif ! grep -qE 'All tests passed|\[ok\]|\[err\]' "$log"; then
    echo "--- $u: the file did not run"; tail -20 "$log" | sed 's/^/  /'
    status=1
  fi
done
exit $status
