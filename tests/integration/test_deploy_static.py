"""Deployment files: YAML / JSON parse; compose, Prometheus, Grafana and Kubernetes agree with
config/default.yaml, the config keys, the server's routes and metric families, and each other."""
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

from deploy_support import *  # noqa: F401,F403  (shared parsers and sources of truth)

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
                    "prefix_cache_queries_total", "spec_decode_num_draft_tokens_total",
                    "spec_decode_num_accepted_tokens_total", "spec_decode_num_drafts_total",
                    "spec_decode_num_accepted_tokens_per_pos_total"):
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


# The Kubernetes API version the manifests are checked against (kubernetes-validate carries the
# schemas offline); the oldest of the releases upstream still supports.
K8S_API_VERSION = "1.32.0"


def kubernetes_validate():
    return pytest.importorskip("kubernetes_validate",
                               reason="kubernetes-validate is not installed (pip)")


def test_k8s_manifests_match_the_api_schemas():
    kv = kubernetes_validate()
    docs = k8s_docs()
    assert len(docs) >= 5
    for kind, doc in docs.items():
        try:
            kv.validate(doc, K8S_API_VERSION, strict=True)
        except kv.ValidationError as e:
            pytest.fail(f"{kind}: {e.message} at {'/'.join(map(str, e.path))}")


@pytest.mark.parametrize("typo", ["probe path", "resources", "container port"])
def test_k8s_schema_check_catches_a_misspelt_field(typo):
    kv = kubernetes_validate()
    dep = json.loads(json.dumps(k8s_docs()["Deployment"]))
    c = dep["spec"]["template"]["spec"]["containers"][0]
    if typo == "probe path":
        c["livenessProbe"]["httpGet"]["pth"] = c["livenessProbe"]["httpGet"].pop("path")
    elif typo == "resources":
        c["resources"]["limit"] = c["resources"].pop("limits")
    else:
        c["ports"][0]["containerport"] = c["ports"][0].pop("containerPort")
    with pytest.raises(kv.ValidationError):
        kv.validate(dep, K8S_API_VERSION, strict=True)


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
