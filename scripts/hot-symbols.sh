#!/usr/bin/env bash
#: Regenerates build/hot-symbols.txt: the functions a release k1s runs while it idles, then those
#: it runs while it starts, serves a little kubectl and `k1s bench` traffic, as recorded by
#: valgrind's callgrind. build.rs hands the list to the linker so these functions sit next to
#: each other, the idle ones first: the kernel then maps far fewer code pages for an idle server,
#: and once the server gives back the pages start-up touched (`src/resident.rs`), the few it
#: maps again are the idle ones (see docs/benchmarks.md, "idle RSS").
#:
#: usage: scripts/hot-symbols.sh [target/release/k1s]   (needs valgrind and kubectl)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/k1s}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs the server under callgrind until the given command finishes, then stops it (SIGTERM, so
# callgrind writes its profile).
profile() {
  local out=$1
  shift
  rm -f "$work/ready"
  valgrind --tool=callgrind --callgrind-out-file="$out" --compress-strings=no --compress-pos=no \
    --demangle=no "$bin" server --data-dir "$work/data" --secure-port 0 --ready-file "$work/ready" \
    >"$work/server.log" 2>"$work/valgrind.log" &
  local pid=$!
  for _ in $(seq 600); do [ -e "$work/ready" ] && break; sleep 0.1; done
  [ -e "$work/ready" ] || { cat "$work/server.log" >&2; kill "$pid"; exit 1; }
  "$@"
  kill -TERM "$pid"
  wait "$pid" || true
}

traffic() {
  export KUBECONFIG=$work/data/admin.conf
  kubectl create deployment web --image=nginx --replicas=2 >/dev/null
  kubectl wait --for=condition=Available deployment/web --timeout=120s >/dev/null
  kubectl get pods,services,events -A >/dev/null
  kubectl apply --server-side -f - >/dev/null <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata: {name: applied}
data: {a: "1"}
EOF
  "$bin" bench --kubeconfig "$KUBECONFIG" create-seq list watch -n 200 >/dev/null
  kubectl delete deployment web >/dev/null
  sleep 20
}

# Splits a restarted server's profile in two: start-up and settling (the first 90 s), then the
# steady idle state (the next 150 s, past the 30 s and 60 s periodic tasks).
# callgrind writes the dumps to restart.out.1 and restart.out.2 (`pid` is profile's).
settle_then_idle() {
  sleep 90
  callgrind_control --dump=startup "$pid" >/dev/null
  sleep 150
  callgrind_control --dump=steady "$pid" >/dev/null
}

profile "$work/first.out" traffic          # first start: bootstrap, then traffic
profile "$work/restart.out" settle_then_idle

# The text symbols of the binary, to drop names callgrind knows but the linker does not.
nm --defined-only "$bin" | awk '$2 ~ /^[tTwW]$/ {print $3}' | sort -u >"$work/symbols"
# Functions in order of first appearance: the steady idle state first, then the restart, then the
# first start with its traffic; callgrind marks recursion levels with a "'N" suffix.
cat "$work/restart.out.2" "$work/restart.out.1" "$work/restart.out" "$work/first.out" |
  sed -n "s/^fn=\(.*\)/\1/p" | sed "s/'[0-9]*$//" |
  awk '!seen[$0]++' | grep -Fxf "$work/symbols" >"$work/hot"
mkdir -p build
cp "$work/hot" build/hot-symbols.txt
echo "build/hot-symbols.txt: $(wc -l <"$work/hot") functions"
