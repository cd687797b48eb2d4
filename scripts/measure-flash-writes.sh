#!/usr/bin/env bash
# Measures the bytes a k1s server writes to storage (`write_bytes` of /proc/<pid>/io) on a fresh
# data dir, for the flash-wear figures in docs/benchmarks.md:
#  1. the size of the fresh data dir;
#  2. sequential creates of ~200-byte ConfigMaps (one client), bytes per create;
#  3. the same from 64 concurrent writers;
#  4. an idle minute of a bare API server, and of one with the controller-manager, the
#     scheduler and one simulated node (IDLE_SECONDS, default 60), after IDLE_SETTLE seconds
#     (default 3). An image store writes an image of itself from time to time, and a sled store
#     (--store-compression, in SERVER_ARGS) its log in 512 KiB buffers as they fill: for the
#     steady state use e.g. IDLE_SETTLE=90 IDLE_SECONDS=900;
#  5. with STRACE=1, which files the writes of step 2 went to (write/pwrite/fsync calls by file).
# Usage: scripts/measure-flash-writes.sh [path/to/k1s] [creates]   (default target/release/k1s,
# 3000). Extra server flags (e.g. --wal-size 1Mi) go in SERVER_ARGS. Runs on the host's disk
# under ${TMPDIR:-/tmp}; a tmpfs there reports nothing.
set -euo pipefail
BIN=${1:-target/release/k1s}
N=${2:-3000}
BENCH=${BENCH:-$BIN}
IDLE=${IDLE_SECONDS:-60}
SETTLE=${IDLE_SETTLE:-3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/k1s-flash.XXXXXX")
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

wb() { awk '/^write_bytes/{print $2}' "/proc/$1/io"; }

# start NAME ARGS...: a server on a fresh data dir; sets PID and DIR.
start() {
    local name=$1
    shift
    DIR="$WORK/$name"
    mkdir -p "$DIR"
    # shellcheck disable=SC2086
    "$BIN" server --data-dir "$DIR" --secure-port 0 ${SERVER_ARGS:-} "$@" >"$DIR.log" 2>&1 &
    PID=$!
    PIDS+=("$PID")
    for _ in $(seq 300); do
        if [ -f "$DIR/admin.conf" ] &&
            kubectl --kubeconfig "$DIR/admin.conf" get --raw /readyz >/dev/null 2>&1; then
            break
        fi
        sleep 0.2
    done
    # The first log files are zero-filled in the background once; let that finish.
    sleep 3
}

bare=(--controllers=-* --nodes 0 --disable-scheduler)

start bare "${bare[@]}"
echo "fresh data dir: $(du -sb "$DIR/store" | cut -f1) bytes in store/ ($(du -sh "$DIR" | cut -f1) with the PKI)"
a=$(wb "$PID")
sleep "$IDLE"
echo "idle bare API server: $(($(wb "$PID") - a)) bytes in ${IDLE}s"

if [ "${STRACE:-0}" = 1 ]; then
    strace -f -y -qq -e trace=write,pwrite64,pwritev,fsync,fdatasync,sync_file_range \
        -p "$PID" -o "$WORK/strace" &
    SPID=$!
    sleep 1
fi
"$BENCH" bench --kubeconfig "$DIR/admin.conf" create-seq create-par -n "$N" --object-size 200 \
    --report-server-io "$PID" 2>/dev/null | grep -E "create-(seq|par)"
if [ "${STRACE:-0}" = 1 ]; then
    kill "$SPID"
    wait "$SPID" 2>/dev/null || true
    python3 - "$WORK/strace" <<'EOF'
import collections, re, sys
calls, sizes = collections.Counter(), collections.Counter()
for line in open(sys.argv[1]):
    m = re.match(r'\d+\s+(\w+)\(\d+<([^>]*)>', line)
    if not m or not m.group(2).startswith('/'):
        continue
    call, path = m.group(1), re.sub(r'\d{20}', 'N', m.group(2))
    r = re.search(r'= (\d+)$', line.strip())
    calls[(call, path)] += 1
    if r and call.startswith(('write', 'pwrite')):
        sizes[(call, path)] += int(r.group(1))
print("syscalls during both create scenarios (and their cleanup), by file:")
for k in sorted(calls, key=lambda k: -sizes[k]):
    print(f"  {k[0]:16} {calls[k]:8} calls {sizes[k]:12} bytes  {k[1]}")
EOF
fi

start full
sleep "$SETTLE"
a=$(wb "$PID")
sleep "$IDLE"
echo "idle server with controllers, scheduler and 1 simulated node: $(($(wb "$PID") - a)) bytes in ${IDLE}s (from ${SETTLE}s after ready)"
