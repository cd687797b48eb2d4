#!/usr/bin/env python3
# Pod create-with-nodeName -> Ready latency against a k1s cluster; usage: bench.py KUBECONFIG N NODES PREFIX
import base64, json, ssl, sys, threading, time, http.client, tempfile, yaml, urllib.parse
kc = yaml.safe_load(open(sys.argv[1])); n = int(sys.argv[2]); nodes = int(sys.argv[3]); prefix = sys.argv[4]
cl = kc["clusters"][0]["cluster"]; user = kc["users"][0]["user"]
d = tempfile.mkdtemp()
def w(name, b64):
    p = f"{d}/{name}"; open(p, "wb").write(base64.b64decode(b64)); return p
ctx = ssl.create_default_context(cafile=w("ca", cl["certificate-authority-data"]))
ctx.load_cert_chain(w("crt", user["client-certificate-data"]), w("key", user["client-key-data"]))
u = urllib.parse.urlparse(cl["server"])
def conn(): return http.client.HTTPSConnection(u.hostname, u.port, context=ctx)
start, ready = {}, {}
done = threading.Event()
def watch():
    c = conn(); c.request("GET", "/api/v1/namespaces/default/pods?watch=1&allowWatchBookmarks=false")
    r = c.getresponse(); buf = b""
    while not done.is_set():
        line = r.readline()
        if not line: break
        if not line.strip(): continue
        ev = json.loads(line); p = ev["object"]; name = p["metadata"]["name"]
        for cnd in p.get("status", {}).get("conditions", []) or []:
            if cnd["type"] == "Ready" and cnd["status"] == "True" and name not in ready:
                ready[name] = time.monotonic()
        if len(ready) >= n: done.set()
t = threading.Thread(target=watch, daemon=True); t.start(); time.sleep(0.5)
c = conn()
for i in range(n):
    name = f"{prefix}-{i}"
    body = json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeName": f"bench-{i % nodes}" if nodes > 1 else "bench", "containers": [{"name": "c", "image": "nginx"}]}})
    start[name] = time.monotonic()
    c.request("POST", "/api/v1/namespaces/default/pods", body, {"Content-Type": "application/json"})
    r = c.getresponse(); r.read()
    if r.status != 201: print("create failed", r.status); sys.exit(1)
done.wait(120)
lat = sorted((ready[k] - start[k]) * 1000 for k in start if k in ready)
print(f"pods {n} ready {len(lat)} p50 {lat[len(lat)//2]:.1f} ms p99 {lat[int(len(lat)*0.99)-1]:.1f} ms max {lat[-1]:.1f} ms")
