#!/usr/bin/env python3
"""Validates scripts/k8s/pytorch-pod.yaml: YAML syntax, and that the pieces fit together the way the plugin
needs them: the plugin's hostPath is the file the package installs (PACKAGE_PLUGIN, from the build's install
rules) mounted at NCCL_PROFILER_PLUGIN; every path in an NCCL_* variable lies on a volume mount of the trainer;
the log and Prometheus directories are writable; the node_exporter sidecar reads the same volume the plugin
writes its textfile to; every mounted volume is defined; and the dump directory the container's command sets,
run through sh with the downward-API values each controller's pods get (JobSet, PyTorchJob, Job, Indexed Job,
a bare pod), is /nccl-logs/<job>/<pod>. Exit 77 (skipped) when PyYAML is missing.
  recipe_k8s.py SOURCE_DIR PACKAGE_PLUGIN"""
import re
import subprocess
import sys

try:
    import yaml
except ImportError:
    print("SKIP: python3 yaml module not installed")
    sys.exit(77)

src, package_plugin = sys.argv[1], sys.argv[2]
path = f"{src}/scripts/k8s/pytorch-pod.yaml"
with open(path) as f:
    docs = list(yaml.safe_load_all(f))
errors = []


def check(cond, msg):
    if not cond:
        errors.append(msg)


check(len(docs) == 1, f"expected one YAML document, found {len(docs)}")
pod = docs[0]
check(pod.get("apiVersion") == "v1" and pod.get("kind") == "Pod", "not a v1 Pod")
spec = pod["spec"]
volumes = {v["name"]: v for v in spec["volumes"]}
containers = {c["name"]: c for c in spec["containers"]}
check("trainer" in containers and "node-exporter" in containers, "needs containers trainer and node-exporter")
trainer, exporter = containers["trainer"], containers["node-exporter"]


def env_of(c):
    return {e["name"]: e for e in c.get("env", [])}


def mount_for(c, p):
    """The volumeMount of container c holding path p (longest prefix)."""
    best = None
    for m in c.get("volumeMounts", []):
        mp = m["mountPath"].rstrip("/")
        if p == mp or p.startswith(mp + "/"):
            if best is None or len(mp) > len(best["mountPath"]):
                best = m
    return best


for c in spec["containers"]:
    for m in c.get("volumeMounts", []):
        check(m["name"] in volumes, f"{c['name']}: mount of undefined volume {m['name']}")

env = env_of(trainer)
for name in ("NCCL_PROFILER_PLUGIN", "NCCL_INSPECTOR_PROM_DUMP", "NCCL_INSPECTOR_PROM_DIR"):
    check(name in env, f"trainer lacks {name}")
defined = []
for e in trainer.get("env", []):
    for ref in re.findall(r"\$\((\w+)\)", e.get("value", "")):
        check(ref in defined, f"{e['name']} uses $({ref}) before it is defined (Kubernetes expands only earlier vars)")
    defined.append(e["name"])

plugin = env["NCCL_PROFILER_PLUGIN"]["value"]
check(plugin.endswith("/lib/libnccl-profiler-inspector.so"), f"odd plugin path {plugin}")
m = mount_for(trainer, plugin)
check(m is not None, f"plugin path {plugin} is on no volume mount")
if m:
    check(m.get("readOnly") is True, "the plugin mount should be read-only")
    vol = volumes[m["name"]]
    if "hostPath" in vol:
        # The node has the package installed: the volume is the file the package puts there.
        check(vol["hostPath"]["path"] == package_plugin,
              f"hostPath {vol['hostPath']['path']} is not where the package installs the plugin ({package_plugin})")
        check(vol["hostPath"].get("type") == "File", "the plugin's hostPath should be of type File")
        check(m["mountPath"] == plugin, "a file mount must be mounted at NCCL_PROFILER_PLUGIN itself")

# The dump directory: set by the command from the controllers' labels (downward API; a missing label is "").
cmd = trainer.get("command", [])
check(cmd[:2] == ["sh", "-c"] and len(cmd) == 3, "the trainer's command should be sh -c SCRIPT")
script = cmd[2] if len(cmd) == 3 else ""
export = script.split(";")[0]
check(export.strip().startswith("export NCCL_INSPECTOR_DUMP_DIR="), "the command should first export the dump dir")
check("exec " in script, "the command should exec the training launcher")
label_of = {}
for e in trainer.get("env", []):
    fp = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath", "")
    mm = re.fullmatch(r"metadata\.labels\['([^']+)'\]", fp)
    if mm:
        label_of[e["name"]] = mm.group(1)
    elif fp == "metadata.name":
        label_of[e["name"]] = None
pod_name = "trainer-0-abcde"
# The labels each controller puts on its pods (job "myjob").
controllers = {
    "Job": {"batch.kubernetes.io/job-name": "myjob", "job-name": "myjob", "controller-uid": "u"},
    "Indexed Job": {"batch.kubernetes.io/job-name": "myjob", "batch.kubernetes.io/job-completion-index": "3"},
    "PyTorchJob": {"training.kubeflow.org/job-name": "myjob", "training.kubeflow.org/replica-type": "worker"},
    "JobSet": {"jobset.sigs.k8s.io/jobset-name": "myjob", "batch.kubernetes.io/job-name": "myjob-workers-0"},
    "bare pod": {},
}
for kind, labels in controllers.items():
    penv = {"PATH": "/usr/bin:/bin"}
    for var, label in label_of.items():
        penv[var] = pod_name if label is None else labels.get(label, "")
    r = subprocess.run(["sh", "-c", export + '; printf %s "$NCCL_INSPECTOR_DUMP_DIR"'], env=penv,
                       capture_output=True, text=True)
    job = "myjob" if labels else pod_name
    check(r.returncode == 0 and r.stdout == f"/nccl-logs/{job}/{pod_name}",
          f"{kind}: dump dir {r.stdout!r}, expected /nccl-logs/{job}/{pod_name}")
dump_dir = "/nccl-logs/myjob/" + pod_name

for name, p in (("NCCL_INSPECTOR_DUMP_DIR", dump_dir), ("NCCL_INSPECTOR_PROM_DIR", env["NCCL_INSPECTOR_PROM_DIR"]["value"])):
    m = mount_for(trainer, p)
    check(m is not None, f"{name}={p} is on no volume mount (logs would vanish with the container)")
    if m:
        check(not m.get("readOnly", False), f"{name} is on a read-only mount")
check(env["NCCL_INSPECTOR_PROM_DUMP"]["value"] == "1", "NCCL_INSPECTOR_PROM_DUMP must be \"1\" (a string)")

prom_dir = env["NCCL_INSPECTOR_PROM_DIR"]["value"]
prom_mount = mount_for(trainer, prom_dir)
args = exporter.get("args", [])
tf = [a.split("=", 1)[1] for a in args if a.startswith("--collector.textfile.directory=")]
check(len(tf) == 1, "node-exporter needs exactly one --collector.textfile.directory=")
if tf and prom_mount:
    em = mount_for(exporter, tf[0])
    check(em is not None and em["name"] == prom_mount["name"],
          "node-exporter's textfile directory is not the volume the plugin writes its .prom file to")
    # node_exporter reads only the top level of the directory: the paths must be the same place in the volume.
    rel_trainer = prom_dir[len(prom_mount["mountPath"]):].strip("/")
    rel_exporter = tf[0][len(em["mountPath"]):].strip("/") if em else None
    check(rel_trainer == rel_exporter, "textfile directory and NCCL_INSPECTOR_PROM_DIR differ within the volume")
ports = [p["containerPort"] for p in exporter.get("ports", [])]
listen = [a for a in args if a.startswith("--web.listen-address=")]
check(bool(listen) and int(listen[0].rsplit(":", 1)[1]) in ports, "node-exporter listen port is not a container port")
ann = pod["metadata"].get("annotations", {})
check(str(ann.get("prometheus.io/port")) in [str(p) for p in ports], "prometheus.io/port annotation mismatch")

if errors:
    for e in errors:
        print("FAIL:", e)
    sys.exit(1)
print(f"PASS: {path}: pod with {len(containers)} containers, {len(volumes)} volumes; plugin {plugin}; "
      f"textfile dir {prom_dir} shared with node-exporter")
