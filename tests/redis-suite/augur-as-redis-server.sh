#!/usr/bin/env bash
# Stands in for `src/redis-server` when Redis 7.0.15's suite starts its own servers
# (units tagged external:skip, such as unit/acl and unit/auth, run only that way).
# The suite calls `src/redis-server CONFIG [ARGS...]`: this keeps the directives Augur
# knows (the list in $AUGUR_PARAMS, plus user/tenant lines; `dir` is one, and Augur enters
# it as Redis does, so a relative aclfile resolves there), prints the PID and ready lines
# the harness waits for, and execs `augur serve` in its place (same PID, so the harness's
# kill works).
set -euo pipefail
conf=""
if [ $# -gt 0 ] && [ -f "$1" ]; then conf=$1; shift; fi
filtered=$(mktemp)
if [ -n "$conf" ]; then
  while IFS= read -r line || [ -n "$line" ]; do
    name=${line%% *}
    case "$name" in ''|'#'*) continue ;; esac
    if [ "$name" = user ] || [ "$name" = tenant ] || grep -qx -- "$name" "$AUGUR_PARAMS"; then
      # logfile '' is Redis's stdout; Augur's default is stderr: leave it out.
      [ "$name" = logfile ] && continue
      # Persistence is off in Augur: the suite's `save 900 1` would be refused.
      case "$name" in save|appendonly) continue ;; esac
      printf '%s\n' "$line" >> "$filtered"
    fi
  done < "$conf"
fi
# The filtered file replaces the suite's own, so that CONFIG REWRITE writes to the file
# a restart_server reads again (the suite's tests of a rewrite then a restart).
if [ -n "$conf" ]; then cp "$filtered" "$conf"; rm -f "$filtered"; filtered=$conf; fi
echo "Augur standing in for redis-server, PID: $$"
echo "Ready to accept connections"
exec "$AUGUR_BIN" serve "$filtered" "$@"
