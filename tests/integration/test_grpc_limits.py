"""gRPC request ids and context errors on both services, llmserve.v1.Generation and
vllm.grpc.engine.VllmEngine (issue 51 item 14): a client's request_id is capped at 128 bytes as
HTTP caps X-Request-Id (a 1 MiB id was accepted), and a prompt plus max_tokens over the context
is OUT_OF_RANGE, as docs/ROUTERS.md says and smg maps to 400 (it was INVALID_ARGUMENT)."""
import uuid

import pytest

import grpc_protos

grpc = pytest.importorskip("grpc")


@pytest.fixture(scope="module")
def channel(daemon):
    ch = grpc.insecure_channel(daemon.grpc_target,
                               options=[("grpc.max_send_message_length", 8 << 20)])
    grpc.channel_ready_future(ch).result(timeout=30)
    yield ch
    ch.close()


@pytest.fixture(scope="module")
def v1(channel):
    pb, pb_grpc = grpc_protos.llmserve_v1()
    return pb, pb_grpc.GenerationStub(channel)


@pytest.fixture(scope="module")
def vllm(channel):
    pb, pb_grpc = grpc_protos.vllm_engine()
    return pb, pb_grpc.VllmEngineStub(channel)


def unique_id(length):
    head = uuid.uuid4().hex
    return (head * (length // len(head) + 1))[:length]


def v1_complete(v1, **fields):
    pb, stub = v1
    return stub.Complete(pb.GenerateRequest(**fields), timeout=120)


def vllm_generate(vllm, input_ids, **fields):
    pb, stub = vllm
    req = pb.GenerateRequest(tokenized=pb.TokenizedInput(input_ids=input_ids), **fields)
    return list(stub.Generate(req, timeout=120))


@pytest.mark.parametrize("length", [129, 1 << 20])
def test_v1_request_id_over_128_bytes_is_invalid_argument(v1, length):
    for call in (v1[1].Complete, lambda r, timeout: list(v1[1].Generate(r, timeout=timeout))):
        with pytest.raises(grpc.RpcError) as e:
            call(v1[0].GenerateRequest(prompt="Hi", max_tokens=1, request_id=unique_id(length)),
                 timeout=120)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert e.value.details().startswith("request_id: ")
        assert "128" in e.value.details()


def test_v1_request_id_of_128_bytes_is_kept(v1):
    out = v1_complete(v1, prompt="Hi", max_tokens=1, request_id=unique_id(128))
    assert out.choices


@pytest.mark.parametrize("length", [129, 1 << 20])
def test_vllm_request_id_over_128_bytes_is_invalid_argument(vllm, length):
    pb, _ = vllm
    with pytest.raises(grpc.RpcError) as e:
        vllm_generate(vllm, [1, 2, 3], request_id=unique_id(length),
                      sampling_params=pb.SamplingParams(max_tokens=1))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.value.details().startswith("request_id: ")


def test_vllm_request_id_of_128_bytes_is_kept(vllm):
    pb, _ = vllm
    assert vllm_generate(vllm, [1, 2, 3], request_id=unique_id(128),
                         sampling_params=pb.SamplingParams(max_tokens=1))


def test_v1_over_the_context_is_out_of_range(v1):
    pb, stub = v1
    max_len = stub.ListModels(pb.ListModelsRequest(), timeout=10).models[0].max_model_len
    with pytest.raises(grpc.RpcError) as e:
        v1_complete(v1, prompt="Hi", max_tokens=max_len + 1)
    assert e.value.code() == grpc.StatusCode.OUT_OF_RANGE
    assert "maximum context length" in e.value.details()
    with pytest.raises(grpc.RpcError) as e:
        list(stub.Generate(pb.GenerateRequest(prompt_token_ids=[1] * (max_len + 1),
                                              max_tokens=1), timeout=120))
    assert e.value.code() == grpc.StatusCode.OUT_OF_RANGE
    # A bad field is still INVALID_ARGUMENT.
    with pytest.raises(grpc.RpcError) as e:
        v1_complete(v1, prompt="Hi", temperature=7)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_vllm_over_the_context_is_out_of_range(vllm):
    pb, stub = vllm
    max_len = stub.GetModelInfo(pb.GetModelInfoRequest(), timeout=10).max_context_length
    with pytest.raises(grpc.RpcError) as e:
        vllm_generate(vllm, [1] * (max_len + 1), request_id=unique_id(16),
                      sampling_params=pb.SamplingParams(max_tokens=1))
    assert e.value.code() == grpc.StatusCode.OUT_OF_RANGE
    assert "maximum context length" in e.value.details()
    with pytest.raises(grpc.RpcError) as e:
        vllm_generate(vllm, [1, 2, 3], request_id=unique_id(16),
                      sampling_params=pb.SamplingParams(max_tokens=max_len + 1))
    assert e.value.code() == grpc.StatusCode.OUT_OF_RANGE
