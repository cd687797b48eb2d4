#!/usr/bin/env bash
#: Idle memory of a whole k1s control plane over time: bootstraps a data dir, restarts the server
#: on it (controllers, scheduler and one simulated node, as `k1s server` runs by default) and
#: prints VmRSS and RssAnon (/proc's kB, which are KiB) at each given second after the restart.
#:
#: usage: scripts/idle-rss.sh BINARY [SECONDS...]   (default: 6 120 300 600)
#: Extra server flags go in K1S_SERVER_FLAGS, e.g. "--controllers=-* --nodes 0 --disable-scheduler".
set -euo pipefail
# A user's server does not capture backtraces; with RUST_BACKTRACE set, every error made at
# start-up walks the stack and the server holds about 0.5 MB more.
unset RUST_BACKTRACE RUST_LIB_BACKTRACE
bin=$1
shift
[ $# -gt 0 ] || set -- 6 120 300 600
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The link order of build/hot-symbols.txt names functions with their symbol hashes, which change
# when a crate's dependencies change: a stale list scatters the idle code again.
list="$(dirname "$0")/../build/hot-symbols.txt"
if [ -f "$list" ] && command -v nm >/dev/null; then
  nm --defined-only "$bin" | awk '{print $3}' | sort -u >"$dir/symbols"
  known=$(sort -u "$list" | comm -12 - "$dir/symbols" | wc -l)
  listed=$(sort -u "$list" | wc -l)
  echo "build/hot-symbols.txt: $known of $listed functions are in $bin"
  if [ $((known * 10)) -lt $((listed * 9)) ]; then
    echo "warning: the list is stale; regenerate it with scripts/hot-symbols.sh" >&2
  fi
fi
# shellcheck disable=SC2086
"$bin" server --data-dir "$dir" --secure-port 0 ${K1S_SERVER_FLAGS:-} >/dev/null 2>&1 &
pid=$!
sleep 4
kill "$pid"
wait "$pid" || true
# shellcheck disable=SC2086
"$bin" server --data-dir "$dir" --secure-port 0 ${K1S_SERVER_FLAGS:-} >/dev/null 2>&1 &
pid=$!
elapsed=0
for t in "$@"; do
  sleep $((t - elapsed))
  elapsed=$t
  printf '%5s s  %s\n' "$t" "$(grep -E 'VmRSS|RssAnon' "/proc/$pid/status" | tr -s ' \t\n' ' ')"
done
kill "$pid"
wait "$pid" || true
