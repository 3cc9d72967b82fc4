"""Python modules for the daemon's gRPC services, generated from proto/ at test time with
grpc_tools (one output folder per session)."""
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT

_OUT = None


def _generate():
    global _OUT
    if _OUT is None:
        protoc = pytest.importorskip("grpc_tools.protoc")
        out = Path(tempfile.mkdtemp(prefix="llmserve_grpc_gen_"))
        proto_dir = ROOT / "proto"
        for rel in ("llmserve/v1/generation.proto", "smg/grpc/common.proto",
                    "vllm/grpc/engine/vllm_engine.proto"):
            rc = protoc.main(["protoc", f"-I{proto_dir}", f"--python_out={out}",
                              f"--grpc_python_out={out}", str(proto_dir / rel)])
            assert rc == 0, rel
        sys.path.insert(0, str(out))
        _OUT = out
    return _OUT


def llmserve_v1():
    """(generation_pb2, generation_pb2_grpc) of llmserve.v1.Generation."""
    _generate()
    from llmserve.v1 import generation_pb2, generation_pb2_grpc
    return generation_pb2, generation_pb2_grpc


def vllm_engine():
    """(vllm_engine_pb2, vllm_engine_pb2_grpc) of vllm.grpc.engine.VllmEngine."""
    _generate()
    from vllm.grpc.engine import vllm_engine_pb2, vllm_engine_pb2_grpc
    return vllm_engine_pb2, vllm_engine_pb2_grpc
