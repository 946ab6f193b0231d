#!/usr/bin/env bash
# The test command: the Rust suite (unit, property and end-to-end tests over real
# sockets), then the client-compatibility script (redis-py, redis-cli, redis-benchmark
# against a release build of `augur serve`), then argument fuzzing of every command over a
# raw socket (tests/compat/fuzz.sh: fixed seeds, RESP2 and RESP3), then Redis 7.0.15's own test suite in
# external mode (tests/redis-suite: its units.txt, minus the tests skip.txt lists), and
# its ACL units and unit/maxmemory, which run only in the suite's own-server mode
# (run-spawn.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace
cargo build --release -p augur
bash tests/compat/run.sh
bash tests/compat/fuzz.sh
bash tests/redis-suite/run.sh
bash tests/redis-suite/run-spawn.sh unit/acl unit/acl-v2 unit/auth unit/maxmemory unit/pause \
  unit/info unit/lazyfree unit/limits unit/quit unit/pubsubshard unit/printver
