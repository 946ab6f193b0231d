#!/usr/bin/env bash
# The kRedis paper's access-latency experiment (§6.4): `augur replay` with one group per
# tenant (AUTH as the tenant, its own trace and miss penalty: on a GET miss the client
# sleeps the penalty, then SETs), against
#   (a) redis    Debian's redis-server, all tenants in one keyspace (ACL users with
#                ~tN:* keys, keys prefixed tN:), allkeys-lru, maxmemory-samples 5
#   (b) off      augur serve --tenant-partitioning off (one pool, free competition)
#   (c) static   augur serve --tenant-partitioning static, equal TENANT maxmemory split
#   (d) kredis   augur serve --tenant-partitioning kredis (the tuner)
#   kredis-ml: the tuner with tenant-objective mean-latency (the paper's metric, not
#   weighted by access rate; in CONFIGS only when asked for)
#   and kredis-k5: the tuner with tenant-k-set 5 (partitioning only, Redis's K: the
#                paper's "pRedis variant with varKRR and K = 5", §6.4.1), to separate what
#                the partitioning and what the choice of K contribute
# 4 tenants (§6.4.1): arc_oltp and orm-busy, each once as a "local" tenant (200 us miss
# penalty) and once as a "remote" one (2000 us), at maxmemory = 25/50/75 % of the
# tenants' combined working set; and 15 tenants (§6.4.2): one trace divided by key hash
# into 15 tenants (the paper divides by client id) with penalties 1, 2, 4, ... 16384 us,
# at 50 %.
#
# Bounds (so that the whole script takes minutes): each tenant replays a PREFIX of its
# trace over and over (--loop) with CONNS connections; WARMUP seconds unmeasured (the
# first pass is cold misses, identical in every configuration), then DURATION measured
# seconds. The working set is the bytes the server itself reports (used_memory over an
# empty server) after one pass of every tenant's prefix with no limit, measured on each
# server kind, and maxmemory = empty used_memory + FRACTION x working set.
#
# Closed loop by default (a connection's next request waits for the previous one, so a
# tenant whose misses are slow offers fewer requests, and Eq. 6's measured access rate
# weighs it less); RATE=N replays open loop, every tenant offered N requests/s
# (`augur replay --rate`: latency counted from when a request was due).
#
# Usage: bench/kredis.sh            (env: PREFIX CONNS WARMUP DURATION FRACS RUN15 RATE ...)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
TRACES=${TRACES:-${AUGUR_TRACES:-$ROOT/../shared/traces}}
PREFIX=${PREFIX:-20000}          # requests of each trace replayed (then looped)
PREFIX15=${PREFIX15:-90000}      # requests of the trace divided into 15 tenants
TRACE15=${TRACE15:-arc_oltp}
CONNS=${CONNS:-2}                # connections per tenant (4-tenant runs)
CONNS15=${CONNS15:-2}            # connections per tenant (15-tenant runs)
RATE=${RATE:-}                   # open loop: requests/s offered per tenant (4 tenants;
RATE15=${RATE15:-}               #   15 tenants); empty: closed loop (augur replay --rate)
WARMUP=${WARMUP:-15}             # seconds, unmeasured (4 tenants)
WARMUP15=${WARMUP15:-30}         # seconds, unmeasured (15 tenants: 16 ms misses are slow)
DURATION=${DURATION:-40}         # seconds, measured
FRACS=${FRACS:-"50 25 75"}       # maxmemory, % of the working set (4 tenants)
FRAC15=${FRAC15:-50}
RUN15=${RUN15:-1}
CONFIGS=${CONFIGS:-"redis off static kredis kredis-k5"}
SAMPLE_RATE=${SAMPLE_RATE:-0.2}  # small working sets: R = 0.01 would sample ~100 keys
INTERVAL_MS=${INTERVAL_MS:-2000}
ALLOC_UNIT=${ALLOC_UNIT:-256kb}
POLL=${POLL:-2}
OUT=${OUT:-/tmp/augur-kredis-bench}
mkdir -p "$OUT"
build_augur
PORT=7400
next_port() { PORT=$((PORT + 1)); }

# Groups of the 4-tenant study: user:trace:penalty.
T4=(t1:arc_oltp:200us t2:arc_oltp:2000us t3:orm-busy:200us t4:orm-busy:2000us)
N4=(oltp-local oltp-remote orm-local orm-remote)
groups4() { # extra group fields...
  local i=0 e
  for e in "${T4[@]}"; do
    IFS=: read -r user tr pen <<<"$e"
    echo "--group"
    echo "name=${N4[$i]},trace=$TRACES/$tr.oracleGeneral.bin.zst,user=$user,pass=pw-$user,prefix=$user:,penalty=$pen,connections=$CONNS,limit=$PREFIX$*"
    i=$((i + 1))
  done
}
groups15() {
  local i
  for i in $(seq 0 14); do
    echo "--group"
    echo "name=u$((i + 1))-$((1 << i))us,trace=$TRACES/$TRACE15.oracleGeneral.bin.zst,user=u$((i + 1)),pass=pw-u$((i + 1)),prefix=u$((i + 1)):,penalty=$((1 << i))us,connections=$CONNS15,limit=$PREFIX15,split=$i/15$*"
  done
}
users_of() { # groups... -> user names
  printf '%s\n' "$@" | sed -n 's/.*user=\([^,]*\),.*/\1/p'
}
penalty_of() { # groups... user -> penalty
  local u=${*: -1}
  printf '%s\n' "${@:1:$#-1}" | sed -n "s/.*user=$u,.*penalty=\([^,]*\),.*/\1/p"
}

used_memory() { info_field "$1" memory used_memory; }

stop_server() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# start KIND PORT MAXMEMORY USERS... ; KIND in redis off static kredis
start_kind() {
  local kind=$1 port=$2 mm=$3; shift 3
  local users=("$@")
  if [ "$kind" = redis ]; then
    local args=(--maxmemory "$mm" --maxmemory-policy allkeys-lru --maxmemory-samples 5)
    for u in "${users[@]}"; do args+=(--user "$u" on ">pw-$u" "~$u:*" +@all); done
    start_redis "$port" "${args[@]}"
    return
  fi
  local args=(--maxmemory "$mm" --maxmemory-policy allkeys-lru --maxmemory-samples 5
    --tenant-sample-rate "$SAMPLE_RATE" --tenant-interval-ms "$INTERVAL_MS"
    --tenant-interval 1000000000 --tenant-alloc-unit "$ALLOC_UNIT")
  for u in "${users[@]}"; do args+=(--user "$u on >pw-$u ~* &* +@all -@admin"); done
  case $kind in
    off) args+=(--tenant-partitioning off) ;;
    static)
      args+=(--tenant-partitioning static)
      local share=$(( (mm - EMPTY_USED) / ${#users[@]} ))
      [ "$mm" = 0 ] && share=0
      for u in "${users[@]}"; do args+=(--tenant "$u maxmemory $share"); done ;;
    kredis | kredis-k5 | kredis-ml)
      args+=(--tenant-partitioning kredis)
      if [ "$kind" = kredis-k5 ]; then args+=(--tenant-k-set 5); else args+=(--tenant-k-set 1,2,4,8,16); fi
      [ "$kind" = kredis-ml ] && args+=(--tenant-objective mean-latency)
      for u in "${users[@]}"; do args+=(--tenant "$u miss-penalty ${PEN[$u]}"); done ;;
  esac
  start_augur "$port" "${args[@]}"
}

# working_set KIND GROUPS... -> sets WS_EMPTY and WS_BYTES for that server kind
working_set() {
  local kind=$1; shift
  local users; mapfile -t users < <(users_of "$@")
  next_port
  EMPTY_USED=0
  [ "$kind" = redis ] || kind=off
  start_kind "$kind" "$PORT" 0 "${users[@]}"
  local pid=$LAST_PID empty
  empty=$(used_memory "$PORT")
  local g=()
  for a in "$@"; do g+=("$(sed 's/penalty=[^,]*/penalty=0/' <<<"$a")"); done
  "$AUGUR" replay --addr "127.0.0.1:$PORT" --no-progress "${g[@]}" >/dev/null
  WS_EMPTY=$empty
  WS_BYTES=$(( $(used_memory "$PORT") - empty ))
  stop_server "$pid"
}

# experiment TAG FRACTIONS WARMUP_SECONDS GROUPS...
experiment() {
  local tag=$1 fracs=$2 warmup=$3; shift 3
  local groups=("$@")
  local users; mapfile -t users < <(users_of "${groups[@]}")
  declare -gA PEN=()
  for u in "${users[@]}"; do PEN[$u]=$(penalty_of "${groups[@]}" "$u"); done
  local r_empty r_ws a_empty a_ws
  working_set redis "${groups[@]}"; r_empty=$WS_EMPTY; r_ws=$WS_BYTES
  working_set off "${groups[@]}"; a_empty=$WS_EMPTY; a_ws=$WS_BYTES
  echo "$tag: working set redis $r_ws B (empty $r_empty B), augur $a_ws B (empty $a_empty B)"
  echo "{\"redis_empty\": $r_empty, \"redis_ws\": $r_ws, \"augur_empty\": $a_empty, \"augur_ws\": $a_ws}" >"$OUT/$tag-ws.json"
  for f in $fracs; do
    for kind in $CONFIGS; do
      local empty ws
      if [ "$kind" = redis ]; then empty=$r_empty; ws=$r_ws; else empty=$a_empty; ws=$a_ws; fi
      local mm=$(( empty + ws * f / 100 ))
      EMPTY_USED=$empty
      next_port
      start_kind "$kind" "$PORT" "$mm" "${users[@]}"
      local pid=$LAST_PID
      local common=(--addr "127.0.0.1:$PORT" --no-progress --loop "${groups[@]}")
      "$AUGUR" replay "${common[@]}" --duration "${warmup}s" >/dev/null
      local poll=()
      [ "$kind" = redis ] || poll=(--poll-tenants "$POLL")
      echo "== $tag maxmemory ${f}% = $mm B: $kind"
      "$AUGUR" replay "${common[@]}" --duration "${DURATION}s" "${poll[@]}" \
        --json "$OUT/$tag-$f-$kind.json"
      redis-cli -p "$PORT" info memory | tr -d '\r' | grep -E '^(used_memory|maxmemory):' | tr '\n' ' '
      echo "evicted_keys:$(info_field "$PORT" stats evicted_keys)"
      stop_server "$pid"
    done
  done
}

t0=$(date +%s)
mapfile -t G4 < <(groups4 ${RATE:+,rate=$RATE})
experiment t4 "$FRACS" "$WARMUP" "${G4[@]}"
if [ "$RUN15" = 1 ]; then
  mapfile -t G15 < <(groups15 ${RATE15:+,rate=$RATE15})
  experiment t15 "$FRAC15" "$WARMUP15" "${G15[@]}"
fi
echo "total wall time: $(( $(date +%s) - t0 )) s"
python3 "$(dirname "$0")/kredis_summary.py" "$OUT"
