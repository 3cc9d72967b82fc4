"""The gRPC API with a `grpcio` client generated from proto/ at test time."""
import sys
import time

import pytest

from conftest import ROOT

grpc = pytest.importorskip("grpc")


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    """Generates llmserve/v1/generation_pb2*.py with grpc_tools and imports them."""
    protoc = pytest.importorskip("grpc_tools.protoc")
    out = tmp_path_factory.mktemp("grpc_gen")
    proto_dir = ROOT / "proto"
    rc = protoc.main(["protoc", f"-I{proto_dir}", f"--python_out={out}", f"--grpc_python_out={out}",
                      str(proto_dir / "llmserve" / "v1" / "generation.proto")])
    assert rc == 0
    sys.path.insert(0, str(out))
    from llmserve.v1 import generation_pb2, generation_pb2_grpc  # noqa: E402
    return generation_pb2, generation_pb2_grpc


@pytest.fixture(scope="module")
def stub(daemon, pb):
    channel = grpc.insecure_channel(daemon.grpc_target)
    grpc.channel_ready_future(channel).result(timeout=30)
    yield pb[1].GenerationStub(channel)
    channel.close()


def test_generate_streams_text_and_a_final_message(pb, stub):
    req = pb[0].GenerateRequest(prompt="The sky is", max_tokens=8, temperature=0)
    msgs = list(stub.Generate(req, timeout=120))
    assert msgs
    assert msgs[-1].finish_reason in ("stop", "length")
    assert msgs[-1].usage.completion_tokens == sum(len(m.token_ids) for m in msgs)
    text = "".join(m.text for m in msgs)
    # The same greedy text as the HTTP API.
    assert text == stub.Complete(req, timeout=120).choices[0].text


def test_complete_tokenize_detokenize_list_models(pb, stub):
    models = stub.ListModels(pb[0].ListModelsRequest(), timeout=10)
    assert len(models.models) == 1 and models.models[0].max_model_len > 0
    tok = stub.Tokenize(pb[0].TokenizeRequest(text="Hello world"), timeout=10)
    assert tok.count == len(tok.token_ids) > 0
    detok = stub.Detokenize(pb[0].DetokenizeRequest(token_ids=tok.token_ids), timeout=10)
    assert "Hello world" in detok.text


def test_invalid_argument(pb, stub):
    with pytest.raises(grpc.RpcError) as e:
        stub.Complete(pb[0].GenerateRequest(prompt="x", temperature=7), timeout=30)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as e:
        stub.Complete(pb[0].GenerateRequest(), timeout=30)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def kv_usage(daemon):
    return daemon.metric("llmserve_kv_cache_usage_ratio")


def wait_idle(daemon, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        if daemon.metric("llmserve_requests_running") == 0 and kv_usage(daemon) == 0:
            return True
        time.sleep(0.1)
    return False


def ended_on_the_server(daemon, before, reason, timeout=10):
    """Waits for the engine to record one more finished request with `reason` and to be idle,
    then checks that the request stopped generating and gave back its KV blocks."""
    end = time.time() + timeout
    while True:
        m = daemon.scrape()
        ended = m.rose(before, "llmserve_requests_finished_total", reason=reason) >= 1
        if (ended and m.value("llmserve_requests_running") == 0) or time.time() > end:
            break
        time.sleep(0.05)
    assert m.rose(before, "llmserve_requests_finished_total", reason=reason) == 1, reason
    for other in ("stop", "length", "abort", "timeout", "error"):
        if other != reason:
            assert m.rose(before, "llmserve_requests_finished_total", reason=other) == 0, other
    # KV blocks back to their idle value: all free (or cached and evictable), none held.
    assert m.value("llmserve_kv_cache_blocks_free") == m.value("llmserve_kv_cache_blocks_total")
    assert m.value("llmserve_kv_cache_usage_ratio") == 0
    time.sleep(0.5)  # dozens of decode steps of this model: no token may come of them
    later = daemon.scrape()
    assert later.value("llmserve_generation_tokens_total") == m.value(
        "llmserve_generation_tokens_total")
    return m


def test_cancel_mid_stream_aborts_on_the_server(daemon, pb, stub):
    assert wait_idle(daemon)
    before = daemon.scrape()
    call = stub.Generate(pb[0].GenerateRequest(prompt="Write a long story.", max_tokens=1000,
                                               ignore_eos=True), timeout=300)
    got = 0
    for msg in call:
        got += len(msg.token_ids)
        if got >= 3:
            call.cancel()
            break
    at_cancel = daemon.scrape()
    with pytest.raises(grpc.RpcError) as e:
        for _ in call:
            pass
    assert e.value.code() == grpc.StatusCode.CANCELLED  # the client library's own verdict
    after = ended_on_the_server(daemon, before, "abort")
    generated = after.rose(before, "llmserve_generation_tokens_total")
    after_cancel = after.rose(at_cancel, "llmserve_generation_tokens_total")
    # One token per step here: a step or two after the cancel (stats lag a step), far short of
    # max_tokens in all.
    assert after_cancel <= 3, f"{after_cancel} tokens generated after the cancel"
    assert generated < 200, generated
    assert after.rose(before, "llmserve_grpc_requests_total", method="Generate",
                      code="CANCELLED") == 1


def counted_on_the_server(daemon, before, method, code, timeout=10):
    """The first scrape whose llmserve_grpc_requests_total{method, code} rose since `before`: a
    client that gave up at its own deadline returns before the server finishes the call."""
    end = time.time() + timeout
    while True:
        after = daemon.scrape()
        labels = {"method": method, "code": code}
        if after.has("llmserve_grpc_requests_total", **labels) and \
                after.rose(before, "llmserve_grpc_requests_total", **labels) > 0:
            return after
        assert time.time() < end, f"no {method} call counted {code}"
        time.sleep(0.05)


def test_deadline_times_out_on_the_server(daemon, pb, stub):
    assert wait_idle(daemon)
    before = daemon.scrape()
    # The client's clock and the engine's deadline check (the same instant) race: the client
    # library may raise DEADLINE_EXCEEDED itself, or the engine may end the request first with
    # finish_reason "timeout". Either way the call ends DEADLINE_EXCEEDED, and the server counts it
    # so: a call that its own deadline ended gets gRPC's status for that, whoever noticed first.
    code, finishes = None, []
    try:
        for r in stub.Generate(pb[0].GenerateRequest(prompt="Tell me everything.",
                                                     max_tokens=2000, ignore_eos=True),
                               timeout=0.5):
            if r.finish_reason:
                finishes.append(r.finish_reason)
    except grpc.RpcError as e:
        code = e.code()
    at_deadline = daemon.scrape()
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED, (code, finishes)
    assert finishes in ([], ["timeout"]), finishes
    # The engine holds the deadline too: a request past it ends as "timeout", whether the
    # engine's deadline check or gRPC's cancellation of the call reaches it first.
    after = ended_on_the_server(daemon, before, "timeout")
    after_deadline = after.rose(at_deadline, "llmserve_generation_tokens_total")
    assert after_deadline <= 3, f"{after_deadline} tokens generated after the deadline"
    after = counted_on_the_server(daemon, before, "Generate", "DEADLINE_EXCEEDED")
    assert after.rose(before, "llmserve_grpc_requests_total", method="Generate",
                      code="DEADLINE_EXCEEDED") == 1
    assert after.rose(before, "llmserve_grpc_requests_total", method="Generate", code="OK") == 0


def test_complete_past_its_deadline_ends_deadline_exceeded(daemon, pb, stub):
    assert wait_idle(daemon)
    before = daemon.scrape()
    with pytest.raises(grpc.RpcError) as e:
        stub.Complete(pb[0].GenerateRequest(prompt="Tell me everything.", max_tokens=2000,
                                            ignore_eos=True), timeout=0.5)
    assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    ended_on_the_server(daemon, before, "timeout")
    after = counted_on_the_server(daemon, before, "Complete", "DEADLINE_EXCEEDED")
    assert after.rose(before, "llmserve_grpc_requests_total", method="Complete",
                      code="DEADLINE_EXCEEDED") == 1


def test_health_service(daemon):
    health_pb2 = pytest.importorskip("grpc_health.v1.health_pb2")
    health_grpc = pytest.importorskip("grpc_health.v1.health_pb2_grpc")
    with grpc.insecure_channel(daemon.grpc_target) as ch:
        h = health_grpc.HealthStub(ch)
        for service in ("", "llmserve.v1.Generation"):
            r = h.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            assert r.status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_lists_the_service(daemon):
    refl_pb2 = pytest.importorskip("grpc_reflection.v1alpha.reflection_pb2")
    refl_grpc = pytest.importorskip("grpc_reflection.v1alpha.reflection_pb2_grpc")
    with grpc.insecure_channel(daemon.grpc_target) as ch:
        stub = refl_grpc.ServerReflectionStub(ch)
        responses = stub.ServerReflectionInfo(
            iter([refl_pb2.ServerReflectionRequest(list_services="")]), timeout=10)
        names = [s.name for r in responses for s in r.list_services_response.service]
    assert "llmserve.v1.Generation" in names
    assert "grpc.health.v1.Health" in names


def test_grpc_counted_in_metrics(daemon, stub, pb):
    before = daemon.scrape()
    stub.ListModels(pb[0].ListModelsRequest(), timeout=10)
    after = daemon.scrape()
    assert after.rose(before, "llmserve_grpc_requests_total", method="ListModels", code="OK") == 1


def test_structured_outputs_through_generate(pb, stub):
    import json
    jsonschema = pytest.importorskip("jsonschema")
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 16},
                                               "age": {"type": "integer", "minimum": 0,
                                                       "maximum": 120}},
              "required": ["name", "age"]}
    for temperature, seed in [(0.0, 0), (1.0, 1), (1.0, 2)]:
        req = pb[0].GenerateRequest(
            prompt="A person as JSON:", max_tokens=80, temperature=temperature, seed=seed,
            structured_outputs=pb[0].StructuredOutputs(json=json.dumps(schema)))
        msgs = list(stub.Generate(req, timeout=120))
        assert msgs[-1].finish_reason == "stop"
        jsonschema.validate(json.loads("".join(m.text for m in msgs)), schema)
    req = pb[0].GenerateRequest(prompt="Pick:", max_tokens=8, temperature=1.0, seed=3,
                                structured_outputs=pb[0].StructuredOutputs(
                                    choice=pb[0].ChoiceList(choices=["left", "right"])))
    assert stub.Complete(req, timeout=120).choices[0].text in ("left", "right")
    with pytest.raises(grpc.RpcError) as e:
        stub.Complete(pb[0].GenerateRequest(
            prompt="x", structured_outputs=pb[0].StructuredOutputs(regex="(")), timeout=60)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "structured_outputs.regex" in e.value.details()


def test_malformed_protobuf_is_invalid_argument(daemon):
    # Issue 23 item 11: bytes that parse as no message (field 1, length-delimited, with a
    # truncated length) were UNIMPLEMENTED, gRPC's answer for a request that fails to parse.
    with grpc.insecure_channel(daemon.grpc_target) as ch:
        for method in ("Complete", "Tokenize", "Detokenize", "ListModels"):
            call = ch.unary_unary(f"/llmserve.v1.Generation/{method}")  # raw bytes both ways
            with pytest.raises(grpc.RpcError) as e:
                call(b"\x0a\xff", timeout=30)
            assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, method
            assert "malformed protobuf" in e.value.details()
        generate = ch.unary_stream("/llmserve.v1.Generation/Generate")
        with pytest.raises(grpc.RpcError) as e:
            list(generate(b"\x0a\xff", timeout=30))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_tokenize_unknown_model_is_not_found(pb, stub):
    with pytest.raises(grpc.RpcError) as e:
        stub.Tokenize(pb[0].TokenizeRequest(model="no-such-model", text="hi"), timeout=10)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    assert "no-such-model" in e.value.details()
    served = stub.ListModels(pb[0].ListModelsRequest(), timeout=10).models[0].id
    assert stub.Tokenize(pb[0].TokenizeRequest(model=served, text="hi"), timeout=10).count > 0


def test_duplicate_request_id_is_refused_while_the_first_is_live(daemon, pb, stub):
    import requests
    assert wait_idle(daemon)
    rid = "dup-id-item-11"
    call = stub.Generate(pb[0].GenerateRequest(prompt="Count:", max_tokens=2000, ignore_eos=True,
                                               request_id=rid), timeout=300)
    next(call)  # live: it has produced a token
    with pytest.raises(grpc.RpcError) as e:
        stub.Complete(pb[0].GenerateRequest(prompt="x", max_tokens=2, request_id=rid), timeout=30)
    assert e.value.code() == grpc.StatusCode.ALREADY_EXISTS
    r = requests.post(daemon.url("/v1/completions"), json={"prompt": "x", "max_tokens": 2},
                      headers={"X-Request-Id": rid}, timeout=30)
    assert r.status_code == 409, r.text
    err = r.json()["error"]
    assert (err["type"], err["code"], err["param"]) == (
        "invalid_request_error", "duplicate_request_id", "X-Request-Id"), err
    # The id names one request, so cancelling by id ends it and frees the id.
    assert requests.delete(daemon.url(f"/v1/requests/{rid}"), timeout=10).status_code == 200
    finishes = []
    try:
        for msg in call:
            if msg.finish_reason:
                finishes.append(msg.finish_reason)
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.CANCELLED
    assert finishes in ([], ["abort"]), finishes
    assert wait_idle(daemon)
    ok = stub.Complete(pb[0].GenerateRequest(prompt="x", max_tokens=2, request_id=rid), timeout=60)
    assert ok.id == rid


def test_resource_exhausted_carries_retry_after(start_daemon, pb):
    import requests
    # 1 run slot + 1 queue slot: two long streams fill them.
    d = start_daemon("--engine.max-num-seqs", "1", "--server.max-waiting-requests", "1")
    with grpc.insecure_channel(d.grpc_target) as ch:
        stub = pb[1].GenerationStub(ch)
        long_req = pb[0].GenerateRequest(prompt="Count:", max_tokens=3000, ignore_eos=True)
        calls = [stub.Generate(long_req, timeout=300)]
        next(calls[0])  # running
        calls.append(stub.Generate(long_req, timeout=300))  # then one waiting behind it
        end = time.time() + 30
        while d.metric("llmserve_requests_waiting") < 1 and time.time() < end:
            time.sleep(0.05)
        assert d.metric("llmserve_requests_waiting") == 1
        with pytest.raises(grpc.RpcError) as e:
            stub.Complete(pb[0].GenerateRequest(prompt="x", max_tokens=2), timeout=30)
        assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        trailing = dict(e.value.trailing_metadata() or ())
        http = requests.post(d.url("/v1/completions"), json={"prompt": "x", "max_tokens": 2},
                             timeout=30)
        assert http.status_code == 429
        assert trailing.get("retry-after") == http.headers["Retry-After"], trailing
        with pytest.raises(grpc.RpcError) as e:
            list(stub.Generate(pb[0].GenerateRequest(prompt="x", max_tokens=2), timeout=30))
        assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert dict(e.value.trailing_metadata() or ()).get("retry-after") == "1"
        for c in calls:
            c.cancel()


def reflection_names(target, metadata=None):
    refl_pb2 = pytest.importorskip("grpc_reflection.v1alpha.reflection_pb2")
    refl_grpc = pytest.importorskip("grpc_reflection.v1alpha.reflection_pb2_grpc")
    with grpc.insecure_channel(target) as ch:
        stub = refl_grpc.ServerReflectionStub(ch)
        reqs = [refl_pb2.ServerReflectionRequest(list_services=""),
                refl_pb2.ServerReflectionRequest(file_containing_symbol="llmserve.v1.Generation")]
        responses = list(stub.ServerReflectionInfo(iter(reqs), metadata=metadata, timeout=10))
    assert len(responses) == 2
    files = responses[1].file_descriptor_response.file_descriptor_proto
    assert files, responses[1]
    return [s.name for s in responses[0].list_services_response.service]


def test_reflection_follows_the_api_key_and_health_stays_open(start_daemon):
    # Issue 23 item 10: with keys set, reflection answered without one.
    health_pb2 = pytest.importorskip("grpc_health.v1.health_pb2")
    health_grpc = pytest.importorskip("grpc_health.v1.health_pb2_grpc")
    d = start_daemon("--api-key", "sk-refl-1")
    with pytest.raises(grpc.RpcError) as e:
        reflection_names(d.grpc_target)
    assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.RpcError) as e:
        reflection_names(d.grpc_target, metadata=[("authorization", "Bearer wrong")])
    assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
    names = reflection_names(d.grpc_target, metadata=[("authorization", "Bearer sk-refl-1")])
    assert "llmserve.v1.Generation" in names
    with grpc.insecure_channel(d.grpc_target) as ch:  # health: open, as HTTP /health
        r = health_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
        assert r.status == health_pb2.HealthCheckResponse.SERVING
