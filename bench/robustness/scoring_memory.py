"""Daemon memory for prompt scoring (issue 41 item 7): peak (VmHWM) and kept (VmRSS 3 s after)
for the issue's request (n 16 x 8180 prompt ids x top-20) and an allowed one, one and three at once.
Usage: LLMSERVE_TEST_MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf .venv-test/bin/python \\
           bench/robustness/scoring_memory.py issue|allowed [raise-limit]"""
import sys, time, json, threading, requests
sys.path.insert(0, "tests/integration")
from conftest import Daemon

def mib(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
def run(label, body, k, extra=()):
    d = Daemon(list(extra)).wait_ready()
    pid = d.proc.pid
    time.sleep(1)
    fresh = mib(pid, "VmRSS")
    res = []
    def one():
        t = time.time()
        r = requests.post(d.url("/v1/completions"), json=body, timeout=1200)
        res.append((r.status_code, len(r.content), time.time() - t))
    ts = [threading.Thread(target=one) for _ in range(k)]
    [t.start() for t in ts]; [t.join() for t in ts]
    time.sleep(3)
    print(json.dumps({"label": label, "x": k, "fresh_MiB": round(fresh), "peak_MiB": round(mib(pid, "VmHWM")),
                      "after_MiB": round(mib(pid, "VmRSS")), "responses": [(s, round(n / 1e6, 1), round(t, 1)) for s, n, t in res]}), flush=True)
    d.stop()
issue = {"prompt": [1 + i % 1000 for i in range(8180)], "max_tokens": 0, "prompt_logprobs": 20, "n": 16}
allowed = {"prompt": [1 + (i * 7) % 5000 for i in range(3000)], "max_tokens": 0, "prompt_logprobs": 20, "n": 16}
which = sys.argv[1]
extra = ["--max-prompt-logprob-entries", "100000000"] if len(sys.argv) > 2 else []
if which == "issue":
    run("issue 16x8180x21", issue, 1, extra); run("issue 16x8180x21", issue, 3, extra)
else:
    run("allowed 16x3000x21", allowed, 1, extra); run("allowed 16x3000x21", allowed, 3, extra)
