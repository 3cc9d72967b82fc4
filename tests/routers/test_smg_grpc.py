"""The real SGLang Model Gateway (PyPI `smg` 1.13.0) over gRPC in front of two llmserve daemons.

smg speaks `vllm.grpc.engine.VllmEngine` to its gRPC workers: it tokenizes, renders the chat
template, detokenizes and parses tool calls itself, and the worker turns token ids into token
ids. Each request through smg is compared with what llmserve's own HTTP front answers for the
same request (greedy), so the oracle is llmserve's tested OpenAI path plus smg's own client.
smg has no `--model-path` here: it loads the tokenizer from the workers' GetTokenizer stream,
which the daemon exports from the GGUF file.

Run by `scripts/test.sh --routers` (the router packages of tests/requirements-routers.txt in
their own venv).
"""
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import time
import zipfile

import grpc
import pytest
import requests
from conftest import MODEL, ROOT, Daemon, free_port, serve_available
from smg_grpc_proto import vllm_engine_pb2, vllm_engine_pb2_grpc
from smg_grpc_proto.generated import common_pb2
from smg_gateway import Smg

FIXTURES = ROOT / "tests" / "fixtures" / "tokenizer"


@pytest.fixture(scope="module")
def workers():
    why = serve_available()
    if why:
        pytest.skip(why)
    # KV events on (ZeroMQ on a free port), so SubscribeKvEvents streams them.
    ds = [Daemon(["--threads", "1", "--kv-events.enabled=true",
                  f"--kv-events.endpoint=tcp://127.0.0.1:{free_port()}"]) for _ in range(2)]
    try:
        for d in ds:
            d.wait_ready()
    except RuntimeError:
        for d in ds:
            d.stop(signal.SIGKILL)
        raise
    yield ds
    for d in ds:
        d.stop()


@pytest.fixture(scope="module")
def model(workers):
    return requests.get(workers[0].url("/v1/models"), timeout=10).json()["data"][0]["id"]


@pytest.fixture(scope="module")
def smg(workers, model):
    g = Smg(workers)
    try:
        g.wait_ready(model)
    except RuntimeError:
        g.stop()
        raise
    yield g
    g.stop()


def stub_for(daemon):
    channel = grpc.insecure_channel(daemon.grpc_target)
    grpc.channel_ready_future(channel).result(timeout=30)
    return channel, vllm_engine_pb2_grpc.VllmEngineStub(channel)


def post(url, body, timeout=180):
    r = requests.post(url, json=body, timeout=timeout)
    assert r.status_code == 200, r.text
    return r.json()


def stream_chat(url, body):
    """The content of a streamed chat completion, its finish reason and its last usage."""
    text, finish, usage = "", None, None
    with requests.post(url, json={**body, "stream": True,
                                  "stream_options": {"include_usage": True}},
                       stream=True, timeout=180) as r:
        assert r.status_code == 200, r.text
        for line in r.iter_lines():
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                usage = chunk["usage"]
            for c in chunk.get("choices", []):
                text += c.get("delta", {}).get("content") or ""
                finish = c.get("finish_reason") or finish
    return text, finish, usage


def both(smg, workers, path, body):
    """The same request through smg and straight to a worker's HTTP front."""
    return post(smg.url + path, body), post(workers[0].url(path), body)


# ---- the protocol itself, with smg's own generated client (smg-grpc-proto) ----

def test_our_proto_declares_smgs_names_and_field_numbers(tmp_path):
    """proto/vllm + proto/smg compiled here against smg-grpc-proto's descriptors: every method
    and every field we declare has their name, number, type, label and oneof."""
    protoc = shutil.which("protoc")
    if not protoc:
        pytest.skip("protoc is not installed (scripts/setup.sh installs protobuf-compiler)")
    from google.protobuf import descriptor_pb2
    out = tmp_path / "ours.pb"
    subprocess.run([protoc, f"-I{ROOT / 'proto'}", "--include_imports",
                    f"--descriptor_set_out={out}",
                    str(ROOT / "proto" / "vllm" / "grpc" / "engine" / "vllm_engine.proto")],
                   check=True)
    ours = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    theirs = {}
    for mod in (vllm_engine_pb2, common_pb2):
        fd = descriptor_pb2.FileDescriptorProto()
        mod.DESCRIPTOR.CopyToProto(fd)
        theirs[fd.package] = fd

    def messages(fd):
        out = {}
        def walk(prefix, ms):
            for m in ms:
                out[f"{prefix}.{m.name}"] = m
                walk(f"{prefix}.{m.name}", m.nested_type)
        walk("." + fd.package, fd.message_type)
        return out

    their_msgs = {k: v for fd in theirs.values() for k, v in messages(fd).items()}
    checked = 0
    for fd in ours.file:
        for name, m in messages(fd).items():
            assert name in their_msgs, f"{name} is not in smg-grpc-proto"
            tf = {f.number: f for f in their_msgs[name].field}
            for f in m.field:
                t = tf.get(f.number)
                assert t is not None, f"{name}.{f.name} = {f.number} is not in smg-grpc-proto"
                assert (f.name, f.type, f.label, f.type_name, f.proto3_optional) == \
                       (t.name, t.type, t.label, t.type_name, t.proto3_optional), f"{name}.{f.name}"
                theirs_oneof = (their_msgs[name].oneof_decl[t.oneof_index].name
                                if t.HasField("oneof_index") and not t.proto3_optional else None)
                ours_oneof = (m.oneof_decl[f.oneof_index].name
                              if f.HasField("oneof_index") and not f.proto3_optional else None)
                assert ours_oneof == theirs_oneof, f"{name}.{f.name}"
                checked += 1
        for svc in fd.service:
            their_svc = next(s for s in theirs[fd.package].service if s.name == svc.name)
            their_methods = {mm.name: mm for mm in their_svc.method}
            assert set(their_methods) == {mm.name for mm in svc.method}
            for mm in svc.method:
                t = their_methods[mm.name]
                assert (mm.input_type, mm.output_type, mm.server_streaming) == \
                       (t.input_type, t.output_type, t.server_streaming), mm.name
    # The request and sampling messages are declared whole (the worker must read every field).
    for name in (".vllm.grpc.engine.GenerateRequest", ".vllm.grpc.engine.SamplingParams",
                 ".vllm.grpc.engine.GetServerInfoResponse", ".vllm.grpc.engine.GetModelInfoResponse"):
        ours_fields = {f.number for fd in ours.file for n, m in messages(fd).items() if n == name
                       for f in m.field}
        assert ours_fields == {f.number for f in their_msgs[name].field}, name
    assert checked > 150


def test_info_calls_through_smgs_client(workers, model):
    channel, stub = stub_for(workers[0])
    try:
        info = stub.GetModelInfo(vllm_engine_pb2.GetModelInfoRequest(), timeout=10)
        assert info.served_model_name == model
        assert os.path.isabs(info.tokenizer_path) and os.path.samefile(info.tokenizer_path, MODEL)
        assert info.max_context_length > 0 and info.vocab_size == 49152
        tok_cfg_eos = list(info.eos_token_ids)
        assert tok_cfg_eos and info.is_generation
        server = stub.GetServerInfo(vllm_engine_pb2.GetServerInfoRequest(), timeout=10)
        assert "llmserve" in server.pairing_protocol
        assert server.max_num_seqs > 0 and server.block_size == 16
        loads = stub.GetLoads(vllm_engine_pb2.GetLoadsRequest(), timeout=10)
        assert len(loads.loads) == 1 and 0.0 <= loads.loads[0].token_usage <= 1.0
        health = stub.HealthCheck(vllm_engine_pb2.HealthCheckRequest(), timeout=10)
        assert health.healthy
        with pytest.raises(grpc.RpcError) as e:
            stub.Embed(vllm_engine_pb2.EmbedRequest(), timeout=10)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "input_ids" in e.value.details()
    finally:
        channel.close()


def test_embed_through_smgs_client_matches_the_http_embeddings(workers, model):
    """smg's generated stub calls Embed with token ids; the vector is the one /v1/embeddings
    returns for the same ids (same pooling, same normalisation), one float per hidden unit."""
    ids = [504, 3058, 314, 260, 1345]
    channel, stub = stub_for(workers[0])
    try:
        resp = stub.Embed(vllm_engine_pb2.EmbedRequest(
            request_id="smg-embed", tokenized=vllm_engine_pb2.TokenizedInput(input_ids=ids)), timeout=60)
    finally:
        channel.close()
    http = post(workers[0].url("/v1/embeddings"), {"model": model, "input": ids})
    want = http["data"][0]["embedding"]
    assert resp.prompt_tokens == len(ids) == http["usage"]["prompt_tokens"]
    assert resp.embedding_dim == len(resp.embedding) == len(want) == 576
    assert max(abs(a - b) for a, b in zip(resp.embedding, want)) < 1e-5


def test_get_tokenizer_exports_the_gguf_tokenizer_as_hf_files(workers):
    """The zip's SHA-256 matches, and HF `tokenizers` loading its tokenizer.json encodes the
    tokenizer corpus exactly as SmolLM2's own tokenizer does (the committed fixture)."""
    tokenizers = pytest.importorskip("tokenizers")
    channel, stub = stub_for(workers[0])
    try:
        chunks = list(stub.GetTokenizer(common_pb2.GetTokenizerRequest(), timeout=60))
    finally:
        channel.close()
    data = b"".join(c.data for c in chunks)
    assert chunks[-1].sha256 == hashlib.sha256(data).hexdigest()
    assert all(not c.sha256 for c in chunks[:-1])
    files = zipfile.ZipFile(io.BytesIO(data))
    names = set(files.namelist())
    assert {"tokenizer.json", "tokenizer_config.json"} <= names
    tok = tokenizers.Tokenizer.from_str(files.read("tokenizer.json").decode())
    corpus = json.loads((FIXTURES / "corpus.json").read_text())
    rows = json.loads((FIXTURES / "smollm2_ids.json").read_text())
    bad = []
    for case, row in zip(corpus, rows):
        text = (bytes.fromhex(case["hex"]).decode("utf-8", errors="replace") if "hex" in case
                else case["text"])
        if tok.encode(text, add_special_tokens=False).ids != row["ids"]:
            bad.append(text)
    assert not bad, f"{len(bad)}/{len(rows)} differ, e.g. {bad[:3]!r}"
    config = json.loads(files.read("tokenizer_config.json"))
    assert config["eos_token"] == "<|im_end|>" and "chat_template" in config


def test_structural_tag_constrains_generate(workers):
    """smg's forced tool calls may come as xgrammar structural tags: the output is the tag, a
    JSON object of the schema, the closing tag. The older structures/triggers form compiles."""
    schema = {"type": "object", "properties": {"city": {"enum": ["Oslo", "Paris"]}},
              "required": ["city"], "additionalProperties": False}
    tag = {"type": "structural_tag", "format": {"type": "sequence", "elements": [
        {"type": "const_string", "value": "<call>"},
        {"type": "json_schema", "json_schema": schema},
        {"type": "const_string", "value": "</call>"}]}}
    legacy = {"structures": [{"begin": "<call>", "schema": schema, "end": "</call>"}],
              "triggers": ["<call>"]}
    prompt = requests.post(workers[0].url("/tokenize"), json={"prompt": "Weather in Oslo?"},
                           timeout=10).json()["tokens"]
    channel, stub = stub_for(workers[0])
    try:
        outs = []
        for i, t in enumerate((tag, legacy)):
            req = vllm_engine_pb2.GenerateRequest(
                request_id=f"tag-{i}", tokenized=vllm_engine_pb2.TokenizedInput(input_ids=prompt),
                sampling_params=vllm_engine_pb2.SamplingParams(
                    temperature=0, max_tokens=60, structural_tag=json.dumps(t)))
            outs.append(list(stub.Generate(req, timeout=120))[-1].complete)
    finally:
        channel.close()
    text = requests.post(workers[0].url("/detokenize"), json={"tokens": list(outs[0].output_ids)},
                         timeout=10).json()["prompt"]
    assert outs[0].finish_reason == "stop", text
    assert text.startswith("<call>") and "</call>" in text, text
    body = text[len("<call>"):text.index("</call>")]
    assert json.loads(body)["city"] in ("Oslo", "Paris")
    assert outs[1].finish_reason in ("stop", "length")


def test_kv_events_stream_the_prompts_blocks(workers):
    """SubscribeKvEvents (from now on): a new prompt's full blocks arrive as BlockStored, each
    with its 16 token ids, chained parent to child from the prompt's first block."""
    prompt = requests.post(workers[0].url("/tokenize"), timeout=10, json={
        "prompt": f"Unique prompt {time.time_ns()}: " + "one two three four five six " * 6,
    }).json()["tokens"]
    assert len(prompt) >= 40
    channel, stub = stub_for(workers[0])
    stream = stub.SubscribeKvEvents(common_pb2.SubscribeKvEventsRequest(), timeout=60)
    try:
        time.sleep(1)  # the subscription starts at the next batch
        req = vllm_engine_pb2.GenerateRequest(
            request_id=f"kv-{time.time_ns()}",
            tokenized=vllm_engine_pb2.TokenizedInput(input_ids=prompt),
            sampling_params=vllm_engine_pb2.SamplingParams(temperature=0, max_tokens=2))
        list(stub.Generate(req, timeout=120))
        blocks, parents = [], []
        for batch in stream:
            for ev in batch.events:
                if ev.WhichOneof("data") == "stored":
                    parents.append(ev.stored.parent_block_hash
                                   if ev.stored.HasField("parent_block_hash") else None)
                    blocks.extend(ev.stored.blocks)
            if len(blocks) >= 2:
                break
    finally:
        stream.cancel()
        channel.close()
    assert parents[0] is None
    assert [list(b.token_ids) for b in blocks[:2]] == [prompt[:16], prompt[16:32]]
    assert all(b.block_size == 16 and b.block_hash != 0 for b in blocks[:2])


def test_kv_events_name_the_host_tier_of_evicted_blocks():
    """A daemon with a host-memory tier (issue 54) and a pool of 20 blocks: a prompt evicted by
    other traffic leaves the pool for host memory, and SubscribeKvEvents says so in smg's own
    terms: its blocks come again as BlockStored with tier KV_CACHE_TIER_HOST and medium "CPU"
    (vLLM's name), under the block hashes the pool announced, so a router keeps crediting them."""
    why = serve_available()
    if why:
        pytest.skip(why)
    d = Daemon(["--threads", "1", "--kv-events.enabled=true",
                f"--kv-events.endpoint=tcp://127.0.0.1:{free_port()}",
                "--kv-cache-bytes", str(23040 * 16 * 21), "--model.max-model-len", "300",
                "--kv-offload.host-bytes", "32MiB"])
    try:
        d.wait_ready()
    except RuntimeError:
        d.stop(signal.SIGKILL)
        raise
    prompts = [" ".join(f"Item {k}-{i}: the {i * 13 + k} box weighs {i * 7 + k} grams."
                        for i in range(14)) for k in range(3)]
    channel, stub = stub_for(d)
    stream = stub.SubscribeKvEvents(common_pb2.SubscribeKvEventsRequest(), timeout=120)
    device, host = set(), set()
    try:
        time.sleep(1)  # the subscription starts at the next batch
        for p in prompts:
            post(d.url("/v1/completions"), {"prompt": p, "max_tokens": 2, "temperature": 0})
        for batch in stream:
            for ev in batch.events:
                if ev.WhichOneof("data") != "stored":
                    continue
                tier = ev.stored.tier if ev.stored.HasField("tier") else None
                hashes = {b.block_hash for b in ev.stored.blocks}
                if tier == common_pb2.KV_CACHE_TIER_HOST:
                    assert ev.stored.medium == "CPU"
                    host |= hashes
                else:
                    assert tier in (None, common_pb2.KV_CACHE_TIER_DEVICE)
                    device |= hashes
            if host and host <= device:
                break
    finally:
        stream.cancel()
        channel.close()
        d.stop()
    assert host and host <= device


def test_keepalive_pings_without_calls_keep_the_channel(workers):
    """A client that pings every 10.5 s while idle (smg pings every 30 s) is not sent away with
    GOAWAY too_many_pings, as gRPC's default server policy (one ping per 5 minutes, 2 strikes)
    would at the third ping: the channel stays READY."""
    channel = grpc.insecure_channel(workers[0].grpc_target, options=[
        ("grpc.keepalive_time_ms", 10500), ("grpc.keepalive_timeout_ms", 5000),
        ("grpc.keepalive_permit_without_calls", 1), ("grpc.http2.max_pings_without_data", 0)])
    states = []
    channel.subscribe(states.append, try_to_connect=True)
    try:
        grpc.channel_ready_future(channel).result(timeout=30)
        stub = vllm_engine_pb2_grpc.VllmEngineStub(channel)
        stub.HealthCheck(vllm_engine_pb2.HealthCheckRequest(), timeout=10)
        time.sleep(38)  # three pings
        stub.HealthCheck(vllm_engine_pb2.HealthCheckRequest(), timeout=10)
        after_ready = states[states.index(grpc.ChannelConnectivity.READY):]
        assert after_ready == [grpc.ChannelConnectivity.READY], after_ready
    finally:
        channel.unsubscribe(states.append)
        channel.close()


# ---- smg in front of two daemons, compared with llmserve's own HTTP front ----

CHAT = {"messages": [{"role": "user", "content": "Name three colors of the rainbow."}],
        "max_tokens": 24, "temperature": 0}


def test_chat_through_smg_equals_llmserve_http(smg, workers, model):
    body = {**CHAT, "model": model}
    for _ in range(2):  # round robin: both workers answer once
        via, direct = both(smg, workers, "/v1/chat/completions", body)
        assert via["choices"][0]["message"]["content"] == \
            direct["choices"][0]["message"]["content"]
        assert via["choices"][0]["finish_reason"] == direct["choices"][0]["finish_reason"]
        assert via["usage"]["prompt_tokens"] == direct["usage"]["prompt_tokens"]
        assert via["usage"]["completion_tokens"] == direct["usage"]["completion_tokens"]


def test_streamed_chat_through_smg_equals_llmserve_http(smg, workers, model):
    body = {**CHAT, "model": model}
    text, finish, usage = stream_chat(smg.url + "/v1/chat/completions", body)
    direct = post(workers[1].url("/v1/chat/completions"), body)
    assert text == direct["choices"][0]["message"]["content"]
    assert finish == direct["choices"][0]["finish_reason"]
    assert usage and usage["completion_tokens"] == direct["usage"]["completion_tokens"]


def test_streamed_samples_with_a_stop_string_through_smg(smg, workers, model):
    """Streamed n=2 with a stop string: chunks tagged by choice index, each choice cut at the
    stop string exactly as llmserve's HTTP front cuts it."""
    body = {"model": model, "messages": [{"role": "user", "content": "Count from 1 to 10"}],
            "max_tokens": 30, "temperature": 0, "n": 2, "stop": ["5"]}
    texts, finishes = {}, {}
    with requests.post(smg.url + "/v1/chat/completions", json={**body, "stream": True},
                       stream=True, timeout=180) as r:
        assert r.status_code == 200, r.text
        for line in r.iter_lines():
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            for c in json.loads(line[6:]).get("choices", []):
                texts[c["index"]] = texts.get(c["index"], "") + (c["delta"].get("content") or "")
                finishes[c["index"]] = c.get("finish_reason") or finishes.get(c["index"])
    direct = post(workers[0].url("/v1/chat/completions"), body)
    assert texts == {c["index"]: c["message"]["content"] for c in direct["choices"]}
    assert finishes == {c["index"]: c["finish_reason"] for c in direct["choices"]}


def test_completion_through_smg_equals_llmserve_http(smg, workers, model):
    body = {"model": model, "prompt": "The capital of France is", "max_tokens": 16,
            "temperature": 0}
    via, direct = both(smg, workers, "/v1/completions", body)
    assert via["choices"][0]["text"] == direct["choices"][0]["text"]
    assert via["usage"]["completion_tokens"] == direct["usage"]["completion_tokens"]


def test_n_and_logprobs_through_smg_equal_llmserve_http(smg, workers, model):
    """n samples and top logprobs travel as token ids and numbers (OutputLogProbs); smg's
    choices carry the same tokens, logprobs and alternatives as llmserve's HTTP answer."""
    body = {"model": model, "messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 6,
            "temperature": 0, "n": 2, "logprobs": True, "top_logprobs": 2}

    def shape(resp):
        return [(c["message"]["content"], [
            (t["token"], round(t["logprob"], 4),
             [(x["token"], round(x["logprob"], 4)) for x in t["top_logprobs"]])
            for t in c["logprobs"]["content"]]) for c in resp["choices"]]

    via, direct = both(smg, workers, "/v1/chat/completions", body)
    assert len(via["choices"]) == 2
    assert shape(via) == shape(direct)


def test_bad_request_through_smg_is_400_with_the_workers_message(smg, model):
    """A request the worker refuses (prompt + max_tokens over the context: OUT_OF_RANGE) comes
    back from smg as 400 with llmserve's message."""
    r = requests.post(smg.url + "/v1/completions", timeout=60, json={
        "model": model, "prompt": "hi", "max_tokens": 100000})
    assert r.status_code == 400, r.text
    assert "maximum context length" in r.json()["error"]["message"]


def test_flush_cache_through_smg_empties_the_workers_prefix_caches(smg, workers, model):
    """smg's POST /flush_cache calls every worker's FlushCache: a prompt cached before is
    computed again after it."""
    body = {"model": model, "prompt": f"Flush me {time.time_ns()} " + "alpha beta gamma " * 12,
            "max_tokens": 1, "temperature": 0}

    def cached(d):
        usage = post(d.url("/v1/completions"), body)["usage"]
        return (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)

    for d in workers:
        cached(d)
        assert cached(d) >= 32  # the repeat hits the prefix cache
    r = requests.post(smg.url + "/flush_cache", timeout=60)
    assert r.status_code == 200, r.text
    for d in workers:
        assert cached(d) == 0


def test_responses_through_smg_equal_llmserve_chat(smg, workers, model):
    """smg runs /v1/responses on its chat pipeline: the output text is llmserve's chat answer."""
    r = post(smg.url + "/v1/responses", {"model": model, "input": CHAT["messages"][0]["content"],
                                         "max_output_tokens": 24, "temperature": 0})
    text = "".join(part["text"] for item in r["output"] if item["type"] == "message"
                   for part in item["content"] if part["type"] == "output_text")
    direct = post(workers[0].url("/v1/chat/completions"), {**CHAT, "model": model})
    assert text == direct["choices"][0]["message"]["content"]


def test_json_schema_output_through_smg_equals_llmserve_http(smg, workers, model):
    schema = {"type": "object", "properties": {"name": {"type": "string"},
                                               "age": {"type": "integer"}},
              "required": ["name", "age"], "additionalProperties": False}
    body = {"model": model, "max_tokens": 48, "temperature": 0,
            "messages": [{"role": "user", "content": "Give a person's name and age as JSON."}],
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": "person", "schema": schema}}}
    via, direct = both(smg, workers, "/v1/chat/completions", body)
    got = via["choices"][0]["message"]["content"]
    assert got == direct["choices"][0]["message"]["content"]
    person = json.loads(got)
    assert set(person) == {"name", "age"} and isinstance(person["age"], int)


def test_forced_tool_call_through_smg_equals_llmserve_http(smg, workers, model):
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "Current weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"], "additionalProperties": False}}}]
    body = {"model": model, "max_tokens": 48, "temperature": 0, "tools": tools,
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
            "messages": [{"role": "user", "content": "What is the weather in Paris?"}]}
    via, direct = both(smg, workers, "/v1/chat/completions", body)
    calls = via["choices"][0]["message"]["tool_calls"]
    want = direct["choices"][0]["message"]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["get_weather"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == \
           [json.loads(c["function"]["arguments"]) for c in want]


def test_client_disconnect_through_smg_aborts_on_the_worker(smg, workers, model):
    """A streamed request dropped by its client: smg drops its gRPC call, the worker aborts the
    engine request (llmserve_requests_finished_total{reason="abort"}) long before max_tokens."""
    def aborted():
        return sum(d.scrape().value("llmserve_requests_finished_total", reason="abort")
                   for d in workers)
    before = aborted()
    body = {"model": model, "prompt": "Count: 1, 2, 3,", "max_tokens": 2000, "temperature": 0,
            "ignore_eos": True, "stream": True}
    with requests.post(smg.url + "/v1/completions", json=body, stream=True, timeout=60) as r:
        assert r.status_code == 200
        got = 0
        for line in r.iter_lines():
            if line.startswith(b"data: "):
                got += 1
                if got >= 3:
                    break
    end = time.time() + 30
    while time.time() < end and aborted() <= before:
        time.sleep(0.25)
    assert aborted() == before + 1
    for d in workers:  # nothing left running, no KV block held
        assert d.scrape().value("llmserve_requests_running") == 0
        assert d.scrape().value("llmserve_kv_cache_usage_ratio") == 0
