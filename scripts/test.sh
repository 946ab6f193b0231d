#!/usr/bin/env bash
# The test command: the Rust suite (unit, property and end-to-end tests over real
# sockets), then the client-compatibility script (redis-py, redis-cli, redis-benchmark
# against `augur serve`), then argument fuzzing of every command over a
# raw socket (tests/compat/fuzz.sh: fixed seeds, RESP2 and RESP3), then Redis 7.0.15's own test suite in
# external mode (tests/redis-suite: its units.txt, minus the tests skip.txt lists), and
# its ACL units and unit/maxmemory, which run only in the suite's own-server mode
# (run-spawn.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's time goes to the log, so a slow CI run shows where its time went.
step() { local t=$SECONDS; "$@"; echo "== $* took $((SECONDS - t))s"; }
step cargo test --workspace
# The scripts below drive the `augur` binary `cargo test` just built (test profile:
# optimized, with debug assertions and overflow checks on), not a separate release
# build: that build (fat LTO, one codegen unit, every dependency again) took 7 of CI's
# minutes; the suites measure no speed, and five of the heaviest Redis units took 63 s on
# this build against 59 s on the release one.
export AUGUR_BIN=$PWD/target/debug/augur
step bash tests/compat/run.sh
step bash tests/compat/fuzz.sh
step bash tests/redis-suite/run.sh
step bash tests/redis-suite/run-spawn.sh unit/acl unit/acl-v2 unit/auth unit/maxmemory unit/pause \
  unit/info unit/lazyfree unit/limits unit/quit unit/pubsubshard unit/printver
