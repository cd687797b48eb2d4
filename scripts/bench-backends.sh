#!/usr/bin/env bash
# Runs `k1s bench` against k1s on its embedded store and k1s on a real etcd, side by side, for
# the backend figures in docs/benchmarks.md (issue 15). Both servers are bare API servers (no
# controllers, scheduler or nodes), each on a fresh data dir on the host's disk; etcd is
# Debian's, one member on loopback ports, its data on the same disk.
# Usage: scripts/bench-backends.sh [path/to/k1s] [objects]   (default target/release/k1s, 3000)
# Extra `k1s bench` arguments go in BENCH_ARGS (default: all scenarios).
set -euo pipefail
BIN=${1:-target/release/k1s}
N=${2:-3000}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/k1s-backends.XXXXXX")
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# serve NAME ARGS...: a bare k1s server on a fresh data dir; waits until it is ready.
serve() {
    local name=$1
    shift
    local dir="$WORK/$name"
    mkdir -p "$dir"
    "$BIN" server --data-dir "$dir" --secure-port 0 --controllers='-*' --nodes 0 \
        --disable-scheduler "$@" >"$dir.log" 2>&1 &
    PIDS+=("$!")
    for _ in $(seq 300); do
        if [ -f "$dir/admin.conf" ] &&
            kubectl --kubeconfig "$dir/admin.conf" get --raw /readyz >/dev/null 2>&1; then
            return
        fi
        sleep 0.2
    done
    echo "k1s ($name) did not get ready; its log:" >&2
    cat "$dir.log" >&2
    exit 1
}

client=$(free_port)
peer=$(free_port)
etcd --name bench --data-dir "$WORK/etcd" \
    --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "bench=http://127.0.0.1:$peer" >"$WORK/etcd.log" 2>&1 &
PIDS+=("$!")

serve sled
serve etcd --etcd-servers "http://127.0.0.1:$client"

for name in sled etcd; do
    echo "== k1s + $name"
    # shellcheck disable=SC2086
    "$BIN" bench --kubeconfig "$WORK/$name/admin.conf" -n "$N" ${BENCH_ARGS:-all}
done
