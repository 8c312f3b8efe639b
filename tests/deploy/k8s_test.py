#!/usr/bin/env python3
"""The Kubernetes manifests of deploy/k8s: valid against Kubernetes' schemas
(kubernetes-validate, strict: no unknown field), and consistent with the
daemon they run: every setting in the ConfigMap is a gpubenchd flag, the
probes reach the health port, the scrape annotations the metrics port.

Usage: k8s_test.py MANIFEST GPUBENCHD
"""
import re
import subprocess
import sys

import yaml


def main(manifest, gpubenchd):
    failures = []
    for version in ("1.29.0", "1.37.0"):  # gRPC probes are GA from 1.27
        r = subprocess.run(["kubernetes-validate", "--strict", "--quiet", "-k", version, manifest],
                           capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"kubernetes-validate {version}: {r.stdout}{r.stderr}")
    docs = {d["kind"]: d for d in yaml.safe_load_all(open(manifest)) if d}
    conf = docs["ConfigMap"]["data"]["gpubenchd.conf"]
    settings = dict(line.split(" = ", 1) for line in conf.strip().splitlines())
    help_text = subprocess.run([gpubenchd, "--help"], capture_output=True, text=True).stdout
    for name in settings:
        if not re.search(rf"--{re.escape(name)}\b", help_text):
            failures.append(f"ConfigMap setting {name} is not a gpubenchd flag")
    pod = docs["DaemonSet"]["spec"]["template"]
    container = pod["spec"]["containers"][0]
    health_port = int(settings["health-listen"].rsplit(":", 1)[1])
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        if container[probe]["grpc"]["port"] != health_port:
            failures.append(f"{probe} is not on the health port {health_port}")
    metrics_port = settings["metrics-listen"].rsplit(":", 1)[1]
    if pod["metadata"]["annotations"]["prometheus.io/port"] != metrics_port:
        failures.append("prometheus.io/port is not the metrics port")
    if container["resources"]["limits"].get("nvidia.com/gpu") is None:
        failures.append("no nvidia.com/gpu limit")
    ports = {p["containerPort"] for p in container["ports"]}
    for address in (settings["listen"], settings["health-listen"], settings["metrics-listen"]):
        if int(address.rsplit(":", 1)[1]) not in ports:
            failures.append(f"{address} is not a container port")
    for f in failures:
        print("FAIL:", f)
    print(f"{manifest}: {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
