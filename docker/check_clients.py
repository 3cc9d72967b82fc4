"""Real clients against a containerised llmserve, run from the host by docker/test-image.sh.

  check_clients.py openai BASE_URL API_KEY MODEL      chat + streaming chat with the openai SDK
  check_clients.py grpc HOST:PORT API_KEY             Generate (server streaming) + grpc.health.v1
  check_clients.py drain BASE_URL API_KEY -- CMD...   streams in flight, then CMD (a container
                                                      stop): every stream must finish in full
Each prints one line per check and exits non-zero on the first failure.
"""
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def ok(msg):
    print(f"  ok: {msg}", flush=True)


def check(cond, msg):
    if not cond:
        print(f"  FAIL: {msg}", flush=True)
        sys.exit(1)


def openai_checks(base_url, key, model):
    import openai

    client = openai.OpenAI(base_url=base_url + "/v1", api_key=key, timeout=120, max_retries=0)
    models = [m.id for m in client.models.list().data]
    check(models == [model], f"/v1/models lists {models}, want [{model!r}] (LLMSERVE_SERVER_SERVED_MODEL_NAME)")
    ok(f"models.list -> {models}")
    msgs = [{"role": "user", "content": "Name a colour."}]
    r = client.chat.completions.create(model=model, messages=msgs, max_tokens=12, temperature=0)
    text = r.choices[0].message.content
    check(bool(text) and r.choices[0].finish_reason in ("stop", "length"), f"chat: {r}")
    check(r.usage.completion_tokens > 0, f"chat usage: {r.usage}")
    ok(f"chat.completions: {text!r} ({r.usage.completion_tokens} tokens, {r.choices[0].finish_reason})")
    chunks, pieces, finish = 0, [], None
    for c in client.chat.completions.create(model=model, messages=msgs, max_tokens=12,
                                            temperature=0, stream=True):
        chunks += 1
        if c.choices:
            pieces.append(c.choices[0].delta.content or "")
            finish = c.choices[0].finish_reason or finish
    streamed = "".join(pieces)
    check(chunks > 2 and streamed == text, f"stream: {chunks} chunks, {streamed!r} vs {text!r}")
    ok(f"chat.completions stream: {chunks} chunks, same text as unary ({finish})")
    try:
        openai.OpenAI(base_url=base_url + "/v1", api_key="wrong-key", max_retries=0).models.list()
        check(False, "a wrong API key was accepted (LLMSERVE_SERVER_API_KEYS)")
    except openai.AuthenticationError:
        ok("wrong API key -> 401 (LLMSERVE_SERVER_API_KEYS is read)")


def grpc_stubs():
    from grpc_tools import protoc

    out = tempfile.mkdtemp(prefix="llmserve-grpc-")
    proto = ROOT / "proto"
    rc = protoc.main(["protoc", f"-I{proto}", f"--python_out={out}", f"--grpc_python_out={out}",
                      str(proto / "llmserve" / "v1" / "generation.proto")])
    check(rc == 0, "protoc failed")
    sys.path.insert(0, out)
    from llmserve.v1 import generation_pb2, generation_pb2_grpc

    return generation_pb2, generation_pb2_grpc


def grpc_checks(target, key):
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    pb, pb_grpc = grpc_stubs()
    with grpc.insecure_channel(target) as channel:
        grpc.channel_ready_future(channel).result(timeout=30)
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "llmserve.v1.Generation"):
            r = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            check(r.status == health_pb2.HealthCheckResponse.SERVING, f"health {service!r}: {r}")
            ok(f"grpc.health.v1 Check({service!r}) -> SERVING")
        stub = pb_grpc.GenerationStub(channel)
        req = pb.GenerateRequest(prompt="The sky is", max_tokens=8, temperature=0)
        md = [("authorization", f"Bearer {key}")]
        msgs = list(stub.Generate(req, metadata=md, timeout=120))
        text = "".join(m.text for m in msgs)
        check(msgs and msgs[-1].finish_reason in ("stop", "length"), f"Generate: {msgs}")
        check(msgs[-1].usage.completion_tokens == sum(len(m.token_ids) for m in msgs), "usage")
        ok(f"Generate: {len(msgs)} messages, {text!r} ({msgs[-1].finish_reason})")
        try:
            list(stub.Generate(req, timeout=30))
            check(False, "Generate without the API key was accepted")
        except grpc.RpcError as e:
            check(e.code() == grpc.StatusCode.UNAUTHENTICATED, f"no key: {e.code()}")
            ok("Generate without the key -> UNAUTHENTICATED")


def drain_checks(base_url, key, stop_cmd, n=4, max_tokens=192):
    """n streaming completions; once all are producing tokens, stop_cmd stops the container.
    Each stream must still end with all max_tokens tokens and finish_reason 'length', and the
    daemon must say it is not ready (draining) while they finish."""
    import requests

    headers = {"Authorization": f"Bearer {key}"}
    started = [threading.Event() for _ in range(n)]
    results = [None] * n

    def stream(i):
        body = {"prompt": f"Story {i}: once upon a time", "max_tokens": max_tokens,
                "ignore_eos": True, "temperature": 0, "stream": True,
                "stream_options": {"include_usage": True}}
        finish, usage, err = None, None, None
        try:
            with requests.post(base_url + "/v1/completions", json=body, headers=headers,
                               stream=True, timeout=180) as r:
                r.raise_for_status()
                for line in r.iter_lines():
                    if not line.startswith(b"data: ") or line == b"data: [DONE]":
                        continue
                    started[i].set()
                    msg = json.loads(line[6:])
                    if msg.get("choices"):
                        finish = msg["choices"][0].get("finish_reason") or finish
                    usage = msg.get("usage") or usage
        except Exception as e:  # noqa: BLE001  (reported below)
            err = repr(e)
        started[i].set()
        results[i] = (finish, usage, err)

    threads = [threading.Thread(target=stream, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for e in started:
        check(e.wait(120), "a stream produced nothing")
    check(all(r is None for r in results), f"a stream ended before the stop: {results}")
    t0 = time.monotonic()
    stopper = subprocess.Popen(stop_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ok(f"{n} streams of {max_tokens} tokens in flight; sent: {' '.join(stop_cmd)}")
    not_ready = None
    while any(t.is_alive() for t in threads) and not_ready is None:
        try:
            code = requests.get(base_url + "/ready", timeout=2).status_code
            if code == 503:
                not_ready = "503"
        except requests.RequestException:
            not_ready = "refused"
        time.sleep(0.1)
    for t in threads:
        t.join(180)
    drained = time.monotonic() - t0
    for i, (finish, usage, err) in enumerate(results):
        check(err is None, f"stream {i} broke during the drain: {err}")
        check(finish == "length" and usage and usage["completion_tokens"] == max_tokens,
              f"stream {i} was cut: finish={finish} usage={usage}")
    ok(f"all {n} streams finished in full ({max_tokens} tokens, 'length') {drained:.1f} s after the stop")
    if not_ready:
        ok(f"while draining, /ready -> {not_ready}")
    out, _ = stopper.communicate(timeout=120)
    check(stopper.returncode == 0, f"{' '.join(stop_cmd)} exited {stopper.returncode}: {out}")
    ok(f"stop command returned {time.monotonic() - t0:.1f} s after it was sent")


def main(argv):
    cmd = argv[1]
    if cmd == "openai":
        openai_checks(argv[2], argv[3], argv[4])
    elif cmd == "grpc":
        grpc_checks(argv[2], argv[3])
    elif cmd == "drain":
        check(argv[4] == "--", "usage: drain BASE_URL KEY -- CMD...")
        drain_checks(argv[2], argv[3], argv[5:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
