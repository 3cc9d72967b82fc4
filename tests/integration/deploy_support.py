"""Shared sources of truth and parsers for the deployment checks (test_deploy_*.py)."""
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


# ---------------------------------------------------------------------------------------------
# The image's file layout, for running docker/entrypoint.sh outside a container


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
