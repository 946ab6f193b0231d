#!/usr/bin/env bash
# MRC model speed and memory on one core (kRedis §6.8): KRR with R = 0.001 and five K
# in one pass, Olken by objects and bytes, KRR backward vs linear update (K = 5, on a
# prefix because the linear update is O(M) per request), peak RSS (VmHWM).
# Default trace arc_p3; args pass through: bench/mrc_speed.sh arc_oltp --prefix 20000
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --release -q -p augur-mrc --example mrc_speed -- "$@"
