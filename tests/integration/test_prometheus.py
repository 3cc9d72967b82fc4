"""A real Prometheus server (Debian package `prometheus`) scrapes /metrics; its query API
returns the TTFT histogram."""
import shutil
import subprocess
import time

import pytest
import requests

from conftest import free_port


def test_prometheus_scrapes_ttft(daemon, tmp_path):
    prom = shutil.which("prometheus")
    if prom is None:
        pytest.skip("prometheus is not installed (apt-get install prometheus)")
    # Some traffic so the histogram has observations.
    for _ in range(3):
        requests.post(daemon.url("/v1/completions"), json={"prompt": "Hi", "max_tokens": 4},
                      timeout=60).raise_for_status()
    port = free_port()
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text(f"""global:
  scrape_interval: 1s
scrape_configs:
  - job_name: llmserve
    static_configs:
      - targets: ["127.0.0.1:{daemon.http_port}"]
""")
    proc = subprocess.Popen([prom, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path}/data",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        api = f"http://127.0.0.1:{port}/api/v1/query"
        query = "llmserve_time_to_first_token_seconds_count"
        end = time.time() + 60
        result = []
        while time.time() < end and not result:
            time.sleep(1)
            try:
                r = requests.get(api, params={"query": query}, timeout=5).json()
                result = r.get("data", {}).get("result", [])
            except requests.RequestException:
                continue
        assert result, "Prometheus returned no TTFT samples"
        assert float(result[0]["value"][1]) >= 3
        buckets = requests.get(api, params={
            "query": "llmserve_time_to_first_token_seconds_bucket"}, timeout=5).json()
        les = {s["metric"]["le"] for s in buckets["data"]["result"]}
        assert "+Inf" in les and len(les) > 5
        up = requests.get(api, params={"query": 'up{job="llmserve"}'}, timeout=5).json()
        assert up["data"]["result"][0]["value"][1] == "1"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
