#!/usr/bin/env bash
# Measures the controller-manager's cleanup speed against a running cluster (KUBECONFIG):
#  1. a namespace holding 1,000 objects of mixed kinds: time from `kubectl delete ns` until gone;
#  2. 1,000 dependents of one owner: time from deleting the owner until all are collected.
# Usage: KUBECONFIG=... scripts/measure-controllers.sh   (needs kubectl and python3)
set -euo pipefail
ns=measure-$RANDOM
kubectl create namespace "$ns" >/dev/null
python3 - "$ns" > /tmp/$ns-objects.yaml <<'PY'
import sys
ns = sys.argv[1]
docs = []
for i in range(400):
    docs.append(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{i}, namespace: {ns}}}\ndata: {{k: v}}")
for i in range(300):
    docs.append(f"apiVersion: v1\nkind: Secret\nmetadata: {{name: s-{i}, namespace: {ns}}}\nstringData: {{k: v}}")
for i in range(200):
    docs.append(f"apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: sa-{i}, namespace: {ns}}}")
for i in range(100):
    docs.append(f"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: r-{i}, namespace: {ns}}}\nrules: [{{apiGroups: [''], resources: [pods], verbs: [get]}}]")
print("\n---\n".join(docs))
PY
kubectl create -f /tmp/$ns-objects.yaml >/dev/null
start=$(date +%s.%N)
kubectl delete namespace "$ns" --timeout=120s >/dev/null
end=$(date +%s.%N)
echo "namespace with 1000 objects (400 ConfigMaps, 300 Secrets, 200 ServiceAccounts, 100 Roles): deleted in $(python3 -c "print(f'{$end-$start:.2f}')") s"

kubectl create namespace "$ns-gc" >/dev/null
kubectl -n "$ns-gc" create configmap owner >/dev/null
uid=$(kubectl -n "$ns-gc" get configmap owner -o jsonpath='{.metadata.uid}')
python3 - "$ns-gc" "$uid" > /tmp/$ns-deps.yaml <<'PY'
import sys
ns, uid = sys.argv[1], sys.argv[2]
print("\n---\n".join(
    f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dep-{i}\n  namespace: {ns}\n  labels: {{dep: 'yes'}}\n  ownerReferences: [{{apiVersion: v1, kind: ConfigMap, name: owner, uid: {uid}}}]"
    for i in range(1000)))
PY
kubectl create -f /tmp/$ns-deps.yaml >/dev/null
start=$(date +%s.%N)
kubectl -n "$ns-gc" delete configmap owner >/dev/null
while [ "$(kubectl -n "$ns-gc" get configmaps -l dep=yes -o name | wc -l)" != 0 ]; do sleep 0.05; done
end=$(date +%s.%N)
echo "1000 dependents of one owner, background deletion: all collected in $(python3 -c "print(f'{$end-$start:.2f}')") s"
kubectl delete namespace "$ns-gc" --wait=false >/dev/null
rm -f /tmp/$ns-objects.yaml /tmp/$ns-deps.yaml
