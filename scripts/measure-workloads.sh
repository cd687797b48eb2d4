#!/usr/bin/env bash
# Measures the workload controllers at scale against a k1s cluster (issue 11's figures).
#  rollout (default):
#   1. a 1,000-replica Deployment: time from `kubectl create` until every pod is Running and
#      Ready and the Deployment is Available (`kubectl rollout status` returns);
#   2. a rolling update of it to another image: time from `kubectl set image` until the
#      rollout is complete, and until no old pod is left.
#   Server: k1s server --data-dir D --nodes 20 --node-pods 250
#  idle:
#   3. 10,000 pods that exist while nothing changes (once their events are written): the
#      server's CPU over 30 idle seconds and its RSS growth per pod (API server, controllers,
#      scheduler and simulated nodes are that one process). A simulated node has a /24 pod
#      range (254 addresses, as kubelet's host-local IPAM), so 10,000 pods need at least 40
#      nodes.
#   Server: k1s server --data-dir D --nodes 50 --node-pods 250
# Usage: KUBECONFIG=D/admin.conf scripts/measure-workloads.sh SERVER_PID [rollout|idle]
# (needs kubectl and python3)
set -euo pipefail
pid=${1:?usage: scripts/measure-workloads.sh SERVER_PID [rollout|idle]}
mode=${2:-rollout}
ns=workloads-$RANDOM
now() { date +%s.%N; }
since() { python3 -c "print(f'{$(now)-$1:.2f}')"; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
no_old_pods() {
  while [ "$(kubectl -n "$ns" get pods -l app=big -o jsonpath='{range .items[*]}{.spec.containers[0].image}{"\n"}{end}' | grep -vc "$1")" != 0 ]; do
    sleep 0.1
  done
}

kubectl create namespace "$ns" >/dev/null

if [ "$mode" = rollout ]; then
  start=$(now)
  kubectl -n "$ns" create deployment big --image=registry.k8s.io/pause:3.10 --replicas=1000 >/dev/null
  kubectl -n "$ns" rollout status deployment/big --timeout=300s >/dev/null
  echo "1,000-replica Deployment: all pods Running and Ready, Deployment Available in $(since "$start") s"

  start=$(now)
  kubectl -n "$ns" set image deployment/big pause=registry.k8s.io/pause:3.9 >/dev/null
  kubectl -n "$ns" rollout status deployment/big --timeout=300s >/dev/null
  echo "rolling update of it (maxSurge 25%, maxUnavailable 25%): complete in $(since "$start") s"
  no_old_pods pause:3.9
  echo "  and every old pod gone after $(since "$start") s"
else
  rss_before=$(rss_kb)
  start=$(now)
  kubectl -n "$ns" create deployment big --image=registry.k8s.io/pause:3.10 --replicas=10000 >/dev/null
  kubectl -n "$ns" rollout status deployment/big --timeout=900s >/dev/null
  echo "10,000-replica Deployment: all Ready in $(since "$start") s"
  # The simulated kubelets' events (Pulled, Created, Started: 30,000) drain at the kubelet's
  # eventRecordQPS of 50, shared by the process's nodes, for about 10 minutes: only then does
  # nothing change.
  events() { kubectl get --raw "/api/v1/namespaces/$ns/events" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))'; }
  last=-1
  while [ "$(events)" != "$last" ]; do last=$(events); sleep 15; done
  echo "  its events all written (${last}) after $(since "$start") s"
  ticks=$(cpu_ticks)
  sleep 30
  idle=$(($(cpu_ticks) - ticks))
  rss_after=$(rss_kb)
  hz=$(getconf CLK_TCK)
  echo "10,000 pods, nothing changing: server CPU $(python3 -c "print(f'{$idle/$hz:.2f}')") s in 30 s ($(python3 -c "print(f'{100*$idle/$hz/30:.1f}')") % of a core)"
  echo "  RSS ${rss_before} kB -> ${rss_after} kB: $(python3 -c "print(f'{($rss_after-$rss_before)*1024/10000:.0f}')") bytes per pod"
fi

kubectl delete namespace "$ns" --wait=false >/dev/null
