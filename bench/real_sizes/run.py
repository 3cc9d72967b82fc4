#!/usr/bin/env python3
"""llmserve against native llama.cpp on random-weight GGUFs of real model shapes, per file format.

For each shape (make_random_gguf.py; --shape takes a comma list) and a list of formats it
  1. writes the base GGUF once (F16 by default, --base bf16), cached in --out-dir,
  2. makes each other format from it with `llama-quantize BASE OUT TYPE` (cached),
  3. for each format, runs --rounds rounds, each one
       `llmserve generate --model F --prompt P --max-tokens 128 --ignore-eos --threads 2`
         (P ~550 tokens; its stderr stats line gives prefill and decode tok/s), then
       `llama-bench -m F -p 512 -n 128 -t 2 -r 3 -o json` (pp512 / tg128 samples),
     so the two alternate and a load change on the shared machine hits both (a format whose file
     either program cannot load gets its error in the table; the others still run),
  4. prints a markdown table (medians; the ratio of the medians), the raw samples per format and
     the exact commands, and writes it to --md; the raw results go to OUT_DIR/<shape>-results.json.
With a bench/membw source, it also measures the read bandwidth of this host (bench_membw, 2
threads; an existing build*/bench/bench_membw, else compiled into --out-dir) and, for files larger
than the L3, reports decode as bytes of weights read per token x tok/s against it. Q2_K and Q3_K_M
rows are also given as a fraction of Q4_K_M's speed (the issue: "not an order of magnitude slower").

--matrix is the issue's whole matrix: shapes smollm2-1.7b, llama-3.2-1b, llama-3.1-8b-body; formats
Q4_0, Q4_K_M, Q5_K_M, Q6_K, Q8_0, F16, BF16, Q2_K, Q3_K_M. The 8B body needs ~14 GiB per base file
and 3-8 GiB per format: --delete-after removes each quantized file once measured (the base stays).
--check-load only checks that both programs load each file and produce a token (`llmserve generate
--max-tokens 1`, `llama-bench -p 0 -n 1 -r 1`), without benchmarking.

Every build, conversion and benchmark runs under `nice -n 19` (--nice N; --no-nice on an idle host):
the machine is shared. Each run's CPU share and load average are reported with the raw samples.

  .venv-bench/bin/python bench/real_sizes/run.py --shape smollm2-1.7b --formats Q4_0,Q4_K_M,F16 \\
      --md /tmp/smollm2-1.7b.md
  .venv-bench/bin/python bench/real_sizes/run.py --matrix --delete-after --md /tmp/matrix.md   # all of it
  .venv-bench/bin/python bench/real_sizes/run.py --matrix --layers 2 --check-load             # quick check
llama.cpp comes from scripts/build-llama-cpp.sh (cached; --llama-bin DIR to use another build).
Speed does not depend on the weights, so these are the speeds of the real models' downloads.
llama-bench's tg decodes from an empty context, and so, by default, does the decode figure of llmserve
(a second run on a 4-token prompt; --decode-context prompt takes it from the ~550-token prompt's run,
whose decode also reads that prompt's KV cache each token).
"""
import argparse
import datetime
import json
import os
import platform
import re
import resource
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEFAULT_MODEL = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
BASE_TYPES = {"F16": "f16", "BF16": "bf16"}
FORMATS = ["Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "F16", "BF16", "Q2_K", "Q3_K_M"]
MATRIX_SHAPES = ["smollm2-1.7b", "llama-3.2-1b", "llama-3.1-8b-body"]
LOW_BIT = ["Q2_K", "Q3_K_M"]  # held against Q4_K_M: must not be an order of magnitude slower

STATS = re.compile(r"stats: prompt (\d+) tok, generated (\d+) tok, ttft ([\d.]+) ms, "
                   r"prefill ([\d.]+) tok/s, decode ([\d.]+) tok/s")
ACTIVATIONS = re.compile(r"stats: .*, matmul activations (\S+)")
SHORT_PROMPT = "The history of computing"
PARAGRAPH = ("The history of computing is a story of layers. Each generation of engineers built "
             "tools on top of the work of the previous one, hiding details that once mattered "
             "and exposing new abstractions that let more people solve harder problems. ")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def niced(cmd, nice):
    return ["nice", "-n", str(nice)] + [str(c) for c in cmd] if nice is not None else [str(c) for c in cmd]


def run(cmd, nice, **kw):
    return subprocess.run(niced(cmd, nice), check=True, text=True, capture_output=True, **kw)


def show(cmd):
    def rel(c):
        c = str(c)
        return c[len(str(REPO)) + 1:] if c.startswith(str(REPO) + "/") else c
    return " ".join(shlex.quote(rel(c)) for c in cmd)


def host_info():
    info = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    try:
        lscpu = subprocess.run(["lscpu"], text=True, capture_output=True).stdout
        for key, name in (("Model name", "cpu"), ("CPU(s)", "cpus"), ("L3 cache", "l3")):
            m = re.search(rf"^{re.escape(key)}:\s*(.+)$", lscpu, re.M)
            if m:
                info[name] = m.group(1).strip()
        flags = re.search(r"^Flags:\s*(.+)$", lscpu, re.M)
        if flags:
            f = set(flags.group(1).split())
            info["isa"] = " ".join(x for x in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16",
                                               "amx_tile") if x in f)
    except OSError:
        pass
    try:
        size = Path("/sys/devices/system/cpu/cpu0/cache/index3/size").read_text().strip()
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1], 1)
        info["l3_bytes"] = int(size.rstrip("KMG")) * mult
    except (OSError, ValueError):
        pass
    info["load_before"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    try:
        info["llmserve_rev"] = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                              text=True, capture_output=True).stdout.strip()
    except OSError:
        pass
    return info


def weight_bytes_per_token(path):
    """Bytes of weights one decode step reads: every 2-D tensor, except token_embd when an
    output.weight exists (then the embedding is one row per token)."""
    import gguf
    r = gguf.GGUFReader(str(path))
    names = {t.name: t for t in r.tensors}
    total = 0
    for t in r.tensors:
        if len(t.shape) < 2:
            continue
        if t.name == "token_embd.weight" and "output.weight" in names:
            continue
        total += int(t.n_bytes)
    return total, os.path.getsize(path)


def find_membw(out_dir, nice):
    for p in sorted(REPO.glob("build*/bench/bench_membw")):
        if os.access(p, os.X_OK):
            return p
    src = REPO / "bench" / "membw" / "membw.cpp"
    if not src.exists():
        return None
    exe = out_dir / "bench_membw"
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        log(f"compiling {src} -> {exe}")
        run(["g++", "-std=c++20", "-O3", "-mavx2", "-mfma", "-mf16c", "-pthread", src, "-o", exe], nice)
    return exe


def measure_membw(exe, threads, nice):
    cmd = [exe, "--threads", threads, "--mib", 2048, "--passes", 5]
    out = run(cmd, nice).stdout
    m = re.search(r"read bandwidth: ([\d.]+) GB/s wall, ([\d.]+) GB/s by thread CPU", out)
    return (float(m.group(1)), float(m.group(2)), show(niced(cmd, nice))) if m else None


def make_prompt(llmserve, n_tokens):
    """The paragraph repeated and cut at a word to the longest text of at most n_tokens tokens with
    the default model's tokenizer (the random models copy its tokenizer)."""
    def count(text):
        out = subprocess.run([str(llmserve), "tokenize", "--model", str(DEFAULT_MODEL), "--text", text],
                             check=True, text=True, capture_output=True).stdout
        return len(json.loads(out)["ids"])
    words = (PARAGRAPH * (n_tokens // 20 + 1)).split()
    lo, hi = 1, len(words)  # count(words[:lo]) <= n_tokens
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(" ".join(words[:mid])) <= n_tokens:
            lo = mid
        else:
            hi = mid - 1
    text = " ".join(words[:lo])
    return text, count(text)


def timed(cmd):
    """subprocess.run, plus the child's wall seconds, CPU seconds and the 1-minute load before."""
    load = os.getloadavg()[0]
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    p = subprocess.run(cmd, text=True, capture_output=True)
    r1, t1 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return p, {"wall_s": round(t1 - t0, 2), "cpu_s": round(cpu, 2), "load1": round(load, 2)}


def run_ours(a, model, prompt):
    cmd = [a.llmserve, "generate", "--model", model, "--prompt", prompt, "--max-tokens", a.gen_tokens,
           "--ignore-eos", "--threads", a.threads] + a.llmserve_arg
    p, t = timed(niced(cmd, a.nice))
    m = STATS.search(p.stderr)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"llmserve generate failed ({p.returncode}): {p.stderr[-2000:]}")
    act = ACTIVATIONS.search(p.stderr)
    return {"prompt": int(m.group(1)), "generated": int(m.group(2)), "ttft_ms": float(m.group(3)),
            "prefill": float(m.group(4)), "decode": float(m.group(5)),
            "activations": act.group(1) if act else "?", **t}


def run_llama(a, model):
    cmd = [Path(a.llama_bin) / "llama-bench", "-m", model, "-p", a.llama_p, "-n", a.gen_tokens,
           "-t", a.threads, "-r", a.llama_reps, "-o", "json"] + a.llama_arg
    p, t = timed(niced(cmd, a.nice))
    if p.returncode != 0:
        raise RuntimeError(f"llama-bench failed ({p.returncode}): {p.stderr[-2000:]}")
    rows = json.loads(p.stdout)
    res = {"pp": [], "tg": [], "commit": None, **t}
    for r in rows:
        res["commit"] = r.get("build_commit")
        key = "pp" if r["n_prompt"] > 0 and r["n_gen"] == 0 else "tg"
        res[key] += [float(x) for x in r.get("samples_ts") or [r["avg_ts"]]]
    return res


def check_load(a, model):
    """(llmserve ok, llama.cpp ok, detail): each program loads the file and makes one token."""
    ours = [a.llmserve, "generate", "--model", model, "--prompt", "Hello", "--max-tokens", 1, "--ignore-eos",
            "--threads", a.threads] + a.llmserve_arg
    p, t = timed(niced(ours, a.nice))
    m = STATS.search(p.stderr)
    ok_ours = p.returncode == 0 and m is not None and int(m.group(2)) >= 1
    detail = [f"llmserve {t['wall_s']} s" if ok_ours else f"llmserve: {p.stderr.strip().splitlines()[-1:]}"]
    theirs = [Path(a.llama_bin) / "llama-bench", "-m", model, "-p", 0, "-n", 1, "-t", a.threads, "-r", 1,
              "-o", "json"] + a.llama_arg
    q, t = timed(niced(theirs, a.nice))
    ok_llama = q.returncode == 0
    if ok_llama:
        try:
            ok_llama = bool(json.loads(q.stdout))
        except ValueError:
            ok_llama = False
    detail.append(f"llama-bench {t['wall_s']} s" if ok_llama else f"llama-bench: {q.stderr.strip().splitlines()[-1:]}")
    return ok_ours, ok_llama, "; ".join(detail), [show(niced(ours, a.nice)), show(niced(theirs, a.nice))]


def ensure_base(a, base_type):
    path = a.out_dir / f"{a.stem}-{base_type}.gguf"
    cmd = [sys.executable, HERE / "make_random_gguf.py", "--shape", a.shape, "--type", BASE_TYPES[base_type],
           "--vocab", a.vocab, "--out", path] + (["--layers", a.layers] if a.layers else [])
    if not path.exists() or path.stat().st_size == 0:
        log(f"writing {path}")
        part = path.with_name(path.name + ".part")  # an interrupted run leaves no file that looks done
        subprocess.run(niced(cmd[:-1] + [part], a.nice), check=True)
        part.rename(path)
    return path, show(cmd)


def ensure_format(a, base, base_type, fmt):
    if fmt == base_type:
        return base, None
    path = a.out_dir / f"{a.stem}-{fmt}.gguf"
    cmd = [Path(a.llama_bin) / "llama-quantize", base, path, fmt, a.threads]
    if not path.exists() or path.stat().st_mtime < base.stat().st_mtime:
        log(f"quantizing {base.name} -> {path.name}")
        t0 = time.time()
        part = path.with_name(path.name + ".part")
        try:
            run([cmd[0], base, part, fmt, a.threads], a.nice)
        except subprocess.CalledProcessError as e:
            part.unlink(missing_ok=True)
            raise RuntimeError(f"llama-quantize {fmt} failed ({e.returncode}): {e.stderr[-2000:]}") from None
        part.rename(path)
        log(f"  {time.time() - t0:.0f} s")
    return path, show(cmd)


def share(t, threads):
    """CPU seconds / (wall seconds x threads): below ~90%, others took the cores during the run."""
    return f"{t['cpu_s'] / max(t['wall_s'], 1e-9) / threads:.0%}"


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt_range(xs, nd=1):
    if not xs:
        return "-"
    if len(xs) == 1:
        return f"{xs[0]:.{nd}f}"
    return f"{med(xs):.{nd}f} ({min(xs):.{nd}f}-{max(xs):.{nd}f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--shape", default="smollm2-1.7b", help="make_random_gguf.py shape(s), comma list")
    ap.add_argument("--formats", default="Q4_0,Q4_K_M,F16", help=f"comma list of {','.join(FORMATS)}")
    ap.add_argument("--matrix", action="store_true",
                    help=f"the issue's matrix: --shape {','.join(MATRIX_SHAPES)} --formats {','.join(FORMATS)}")
    ap.add_argument("--check-load", action="store_true",
                    help="only check that llmserve and llama-bench load each file (one token each)")
    ap.add_argument("--delete-after", action="store_true",
                    help="delete each quantized file once measured (the 8B body's formats take ~40 GiB)")
    ap.add_argument("--base", choices=sorted(BASE_TYPES), default="F16", help="type of the random base file")
    ap.add_argument("--vocab", choices=["pad", "keep"], default="pad")
    ap.add_argument("--layers", type=int, help="cut the layer count (quick checks)")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds per format")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=550, help="llmserve's prompt, about")
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--llama-p", type=int, default=512)
    ap.add_argument("--llama-reps", type=int, default=3, help="llama-bench -r")
    ap.add_argument("--llmserve", default=str(REPO / "build" / "llmserve"))
    ap.add_argument("--llmserve-arg", action="append", default=[], help="extra llmserve generate flag")
    ap.add_argument("--llama-arg", action="append", default=[], help="extra llama-bench flag")
    ap.add_argument("--llama-bin", help="dir with llama-bench / llama-quantize (default: scripts/build-llama-cpp.sh)")
    ap.add_argument("--out-dir", default=str(HERE / "out"))
    ap.add_argument("--md", help="also write the report here")
    ap.add_argument("--nice", type=int, default=19, help="niceness of every child (default 19: a shared machine)")
    ap.add_argument("--no-nice", action="store_true", help="run at normal priority (an idle, unshared host)")
    ap.add_argument("--no-membw", action="store_true")
    ap.add_argument("--decode-context", choices=["empty", "prompt"], default="empty",
                    help="llmserve's decode figure: from a run on a short prompt, as llama-bench's tg "
                         "(default), or from the long prompt's run")
    a = ap.parse_args()

    if a.no_nice:
        a.nice = None
    if a.matrix:
        a.shape, a.formats = ",".join(MATRIX_SHAPES), ",".join(FORMATS)
    a.formats = [f.strip().upper() for f in a.formats.split(",") if f.strip()]
    for f in a.formats:
        if f not in FORMATS:
            ap.error(f"unknown format {f}")
    shapes = [x.strip() for x in a.shape.split(",") if x.strip()]
    a.out_dir = Path(a.out_dir)
    a.out_dir.mkdir(parents=True, exist_ok=True)
    if not a.llama_bin:
        p = subprocess.run([str(REPO / "scripts" / "build-llama-cpp.sh")], text=True, capture_output=True)
        if p.returncode != 0:
            sys.exit(f"run.py: scripts/build-llama-cpp.sh failed:\n{p.stderr}")
        a.llama_bin = p.stdout.strip().splitlines()[-1]
        if not os.path.isabs(a.llama_bin):
            a.llama_bin = str(REPO / a.llama_bin)

    host = host_info()
    log(f"host: {host}")
    if a.check_load:
        check_loads(a, shapes, host)
        return
    # Measured before each format; the best wall-clock figure is the bandwidth decode is held to.
    st = {"membw": None, "exe": None, "all": []}

    def take_membw():
        if st["exe"]:
            m = measure_membw(st["exe"], a.threads, a.nice)
            if m:
                st["all"].append(m[0])
                if st["membw"] is None or m[0] > st["membw"][0]:
                    st["membw"] = m
                log(f"membw: {m[0]:.1f} GB/s wall, {m[1]:.1f} by CPU time")

    if not a.no_membw:
        st["exe"] = find_membw(a.out_dir, a.nice)

    prompt, prompt_n = make_prompt(a.llmserve, a.prompt_tokens)
    log(f"prompt: {prompt_n} tokens")
    texts = []
    for shape in shapes:
        a.shape = shape
        a.stem = a.shape + (f"-L{a.layers}" if a.layers else "") + ("-keepvocab" if a.vocab == "keep" else "")
        base_type = a.base
        base, base_cmd = ensure_base(a, base_type)
        results = {}
        for fmt in a.formats:
            r = {"ours": [], "llama": {"pp": [], "tg": []}, "quantize_cmd": None}
            results[fmt] = r
            try:
                path, qcmd = ensure_format(a, base, base_type, fmt)
                take_membw()
                wbytes, fbytes = weight_bytes_per_token(path)
                r.update({"file": str(path), "file_bytes": fbytes, "weight_bytes_per_token": wbytes,
                          "quantize_cmd": qcmd})
                for i in range(a.rounds):
                    log(f"{shape} {fmt} round {i + 1}/{a.rounds}: llmserve")
                    o = run_ours(a, path, prompt)
                    log(f"  prefill {o['prefill']:.1f} tok/s, decode {o['decode']:.1f} tok/s ({o['prompt']} tok "
                        f"prompt; {share(o, a.threads)} of {a.threads} cores, load {o['load1']})")
                    if a.decode_context == "empty":
                        short = run_ours(a, path, SHORT_PROMPT)
                        o["decode_after_prompt"], o["decode"] = o["decode"], short["decode"]
                        log(f"  decode {o['decode']:.1f} tok/s after a {short['prompt']}-token prompt")
                    r["ours"].append(o)
                    log(f"{shape} {fmt} round {i + 1}/{a.rounds}: llama-bench")
                    l = run_llama(a, path)
                    r["llama"]["pp"] += l["pp"]
                    r["llama"]["tg"] += l["tg"]
                    r["llama_commit"] = l["commit"]
                    r.setdefault("llama_runs", []).append({k: l[k] for k in ("wall_s", "cpu_s", "load1")})
                    log(f"  pp{a.llama_p} {l['pp']} tg{a.gen_tokens} {l['tg']} ({share(l, a.threads)} of "
                        f"{a.threads} cores, load {l['load1']})")
            except RuntimeError as e:  # one format's failure does not stop the matrix
                r["error"] = str(e).strip().splitlines()[-1][:300] if str(e).strip() else repr(e)
                log(f"{shape} {fmt}: FAILED: {e}")
            if a.delete_after and r.get("file") and Path(r["file"]) != base:
                Path(r["file"]).unlink(missing_ok=True)
                log(f"deleted {r['file']}")
            (a.out_dir / f"{a.stem}-results.json").write_text(json.dumps(
                {"host": host, "membw": st["membw"], "membw_all": st["all"], "prompt_tokens": prompt_n,
                 "results": results}, indent=1))
            texts_now = texts + [report(a, host, st["membw"], st["all"], prompt_n, base_cmd, results)]
            if a.md:
                Path(a.md).write_text("\n\n".join(texts_now) + "\n")
        texts.append(report(a, host, st["membw"], st["all"], prompt_n, base_cmd, results))
    print("\n\n".join(texts))


def check_loads(a, shapes, host):
    """--check-load: a table of which program loads which file."""
    out = [f"Load check: llmserve {a.llmserve}, llama.cpp {a.llama_bin}; {host['date']}.", "",
           "| shape | format | file GiB | llmserve | llama.cpp | detail |", "|---|---|---|---|---|---|"]
    cmds = []
    for shape in shapes:
        a.shape = shape
        a.stem = a.shape + (f"-L{a.layers}" if a.layers else "") + ("-keepvocab" if a.vocab == "keep" else "")
        base, _ = ensure_base(a, a.base)
        for fmt in a.formats:
            try:
                path, _ = ensure_format(a, base, a.base, fmt)
            except RuntimeError as e:
                out.append(f"| {a.stem} | {fmt} | - | - | - | {e} |")
                continue
            ok_ours, ok_llama, detail, c = check_load(a, path)
            cmds = c
            log(f"{a.stem} {fmt}: llmserve {'ok' if ok_ours else 'FAIL'}, llama.cpp {'ok' if ok_llama else 'FAIL'}"
                f" ({detail})")
            out.append(f"| {a.stem} | {fmt} | {os.path.getsize(path) / 2**30:.2f} | {'ok' if ok_ours else 'FAIL'} | "
                       f"{'ok' if ok_llama else 'FAIL'} | {detail} |")
            if a.delete_after and path != base:
                path.unlink(missing_ok=True)
            if a.md:
                Path(a.md).write_text("\n".join(out) + "\n")
    out += ["", "Commands:", "", f"    {show([sys.executable, Path(__file__)] + sys.argv[1:])}"]
    out += [f"    # {c}" for c in cmds]
    text = "\n".join(out)
    print(text)
    if a.md:
        Path(a.md).write_text(text + "\n")


def report(a, host, membw, membw_all, prompt_n, base_cmd, results):
    host["load_after"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    commit = next((r.get("llama_commit") for r in results.values() if r.get("llama_commit")), "unknown")
    if commit == "unknown" and Path(a.llama_bin).parent.parent.name.startswith("llama.cpp-"):
        commit = "from the llama-cpp-python " + Path(a.llama_bin).parent.parent.name[len("llama.cpp-"):] + " sdist"
    ex = "<F>"
    ours_cmd = show(niced([a.llmserve, "generate", "--model", ex, "--prompt", "<P>", "--max-tokens", a.gen_tokens,
                           "--ignore-eos", "--threads", a.threads] + a.llmserve_arg, a.nice))
    llama_cmd = show(niced([Path(a.llama_bin) / "llama-bench", "-m", ex, "-p", a.llama_p, "-n", a.gen_tokens,
                            "-t", a.threads, "-r", a.llama_reps, "-o", "json"] + a.llama_arg, a.nice))
    l3 = host.get("l3_bytes")

    out = []
    out.append(f"Shape `{a.stem}`; host {host.get('cpu', '?')}, {host.get('cpus', '?')} CPUs, L3 {host.get('l3', '?')}"
               f" ({host.get('isa', '')}); {host['date']}; load average {host['load_before']} before, "
               f"{host['load_after']} after; llmserve {host.get('llmserve_rev', '?')}, llama.cpp {commit}.")
    decode_from = (f"decode from a second run on the prompt \"{SHORT_PROMPT}\" (as llama-bench's tg, from an "
                   f"empty context)" if a.decode_context == "empty" else "decode from the same run")
    out.append(f"{a.rounds} alternating rounds per format: llmserve ({prompt_n}-token prompt, "
               f"{a.gen_tokens} tokens, EOS ignored; {decode_from}), then llama-bench -r {a.llama_reps}. "
               f"Medians (range).")
    if membw:
        out.append(f"Read bandwidth (`bench_membw`, {a.threads} threads, before each format: "
                   f"{', '.join(f'{x:.1f}' for x in membw_all)} GB/s wall): best {membw[0]:.1f} GB/s, the reference below. "
                   f"Decode bandwidth = bytes of weights read per token (every matrix, the LM head included) x decode tok/s.")
    out.append("")
    head = ["format (llmserve's matmul activations)", "file GiB", f"llmserve prefill tok/s", "llmserve decode tok/s",
            f"llama.cpp pp{a.llama_p}", f"llama.cpp tg{a.gen_tokens}", "ratio prefill / decode"]
    if membw:
        head.append("decode GB/s (of membw): llmserve / llama.cpp")
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    for fmt, r in results.items():
        op = [x["prefill"] for x in r["ours"]]
        od = [x["decode"] for x in r["ours"]]
        lp, lt = r["llama"]["pp"], r["llama"]["tg"]
        if r.get("error") or not (op and lp):
            row = [fmt, f"{r['file_bytes'] / 2**30:.2f}" if "file_bytes" in r else "-", fmt_range(op), fmt_range(od),
                   fmt_range(lp), fmt_range(lt), f"FAILED: {r.get('error', 'no samples')}"]
            out.append("| " + " | ".join(row + ["-"] * (len(head) - len(row))) + " |")
            continue
        acts = sorted({x.get("activations", "?") for x in r["ours"]})
        row = [f"{fmt} ({', '.join(acts)})", f"{r['file_bytes'] / 2**30:.2f}", fmt_range(op), fmt_range(od), fmt_range(lp), fmt_range(lt),
               f"{med(op) / med(lp):.2f}x / {med(od) / med(lt):.2f}x"]
        if membw:
            wb = r["weight_bytes_per_token"]
            if l3 and wb <= l3:
                row.append("fits in L3")
            else:
                go, gl = wb * med(od) / 1e9, wb * med(lt) / 1e9
                row.append(f"{go:.1f} ({go / membw[0]:.0%}) / {gl:.1f} ({gl / membw[0]:.0%})")
        out.append("| " + " | ".join(row) + " |")
    ref = results.get("Q4_K_M")
    if ref and ref["ours"]:
        for fmt in LOW_BIT:
            r = results.get(fmt)
            if r and r["ours"]:
                fp = med([x["prefill"] for x in r["ours"]]) / med([x["prefill"] for x in ref["ours"]])
                fd = med([x["decode"] for x in r["ours"]]) / med([x["decode"] for x in ref["ours"]])
                verdict = "ok" if min(fp, fd) >= 0.1 else "an order of magnitude slower"
                out.append("")
                out.append(f"{fmt} against Q4_K_M (llmserve): prefill {fp:.2f}x, decode {fd:.2f}x: {verdict}.")
    out.append("")
    out.append("Commands:")
    out.append("")
    out.append(f"    {show([sys.executable, Path(__file__)] + sys.argv[1:])}")
    out.append(f"    # base file: {base_cmd}")
    for fmt, r in results.items():
        if r["quantize_cmd"]:
            out.append(f"    # {fmt}: {r['quantize_cmd']}")
    out.append(f"    # each round: {ours_cmd}")
    out.append(f"    #   then:     {llama_cmd}")
    if membw:
        out.append(f"    # bandwidth: {membw[2]}")
    out.append("    # <F>: bench/real_sizes/out/<shape>-<format>.gguf")
    out.append(f"    # <P>: {prompt_n} tokens, the paragraph of bench/real_sizes/run.py repeated")
    out.append("")
    out.append("Raw samples:")
    out.append("")
    for fmt, r in results.items():
        if not r["ours"]:
            continue
        j = lambda xs: ", ".join(f"{x:.1f}" for x in xs)  # noqa: E731
        after = [x["decode_after_prompt"] for x in r["ours"] if "decode_after_prompt" in x]
        out.append(f"- {fmt}: llmserve prefill {j(x['prefill'] for x in r['ours'])}, decode "
                   f"{j(x['decode'] for x in r['ours'])}"
                   + (f" (after the {prompt_n}-token prompt: {j(after)})" if after else "")
                   + f"; llama.cpp pp {j(r['llama']['pp'])}, tg {j(r['llama']['tg'])}")
        shares = [share(x, a.threads) for x in r["ours"] if "cpu_s" in x]
        lshares = [share(x, a.threads) for x in r.get("llama_runs", [])]
        if shares:
            out.append(f"  (CPU share of {a.threads} cores per run: llmserve {', '.join(shares)}; llama-bench "
                       f"{', '.join(lshares)}; load average before each: "
                       f"{', '.join(str(x['load1']) for x in r['ours'])} / "
                       f"{', '.join(str(x['load1']) for x in r.get('llama_runs', []))})")
    return "\n".join(out)




if __name__ == "__main__":
    main()
