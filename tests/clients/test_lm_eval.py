"""lm-evaluation-harness (`lm-eval[api]`, unmodified) against llmserve: `--model
local-completions` over a small local task (tests/clients/data): multiple-choice
log-likelihoods (echo + logprobs + max_tokens 1 on batched token-id prompts) and a
generate_until part. Its log-likelihoods must equal those computed here from /v1/completions
echo output on token ids from the exported Hugging Face tokenizer; its greedy generations must
equal a direct completion of the same prompt; its accuracy is printed.
"""
import glob
import json
import math
from pathlib import Path

import pytest
import requests
import yaml
from tokenizers import Tokenizer

from conftest import ROOT, record_line, run_tool, venv_bin

DATA = ROOT / "tests" / "clients" / "data"
MAX_GEN_TOKS = 8


def write_tasks(folder: Path):
    mc = {
        "task": "llmserve_mc",
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(DATA / "lm_eval_mc.jsonl")}},
        "test_split": "test",
        "output_type": "multiple_choice",
        "doc_to_text": "{{question}}",
        "doc_to_choice": "{{choices}}",
        "doc_to_target": "{{answer}}",
        "metric_list": [{"metric": "acc", "aggregation": "mean", "higher_is_better": True}],
    }
    gen = {
        "task": "llmserve_gen",
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(DATA / "lm_eval_gen.jsonl")}},
        "test_split": "test",
        "output_type": "generate_until",
        "doc_to_text": "Question: {{question}}\nAnswer:",
        "doc_to_target": " {{answer}}",
        "generation_kwargs": {"until": ["\n"], "max_gen_toks": MAX_GEN_TOKS,
                              "do_sample": False, "temperature": 0},
        "metric_list": [{"metric": "exact_match", "aggregation": "mean",
                         "higher_is_better": True, "ignore_case": True,
                         "ignore_punctuation": True}],
    }
    for cfg in (mc, gen):
        (folder / f"{cfg['task']}.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))


def samples(out: Path, task: str):
    files = glob.glob(str(out / "**" / f"samples_{task}_*.jsonl"), recursive=True)
    assert len(files) == 1, f"lm-eval wrote {files} for {task}"
    with open(files[0], encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def results(out: Path):
    files = glob.glob(str(out / "**" / "results_*.json"), recursive=True)
    assert len(files) == 1, files
    return json.loads(Path(files[0]).read_text())["results"]


def our_loglikelihood(daemon, model_id, tok, context, continuation):
    """lm-eval's split (whole text encoded, the context's tokens cut off), scored by one
    max_tokens 0 echo request of our own."""
    whole = tok.encode(context + continuation).ids
    ctx = tok.encode(context).ids
    assert whole[:len(ctx)] == ctx
    r = requests.post(daemon.url("/v1/completions"), timeout=120, json={
        "model": model_id, "prompt": whole, "max_tokens": 0, "echo": True, "logprobs": 1,
        "temperature": 0})
    r.raise_for_status()
    lp = r.json()["choices"][0]["logprobs"]
    assert len(lp["token_logprobs"]) == len(whole)
    cont = lp["token_logprobs"][len(ctx):]
    greedy = all(t == max(top.values())
                 for t, top in zip(cont, lp["top_logprobs"][len(ctx):]))
    return sum(cont), greedy


@pytest.fixture(scope="module")
def lm_eval_run(daemon, model_id, tokenizer_dir, tmp_path_factory):
    tasks = tmp_path_factory.mktemp("lm_eval_tasks")
    write_tasks(tasks)
    out = tmp_path_factory.mktemp("lm_eval_out")
    model_args = ",".join([
        f"model={model_id}", f"base_url={daemon.url('/v1/completions')}",
        "tokenizer_backend=huggingface", f"tokenizer={tokenizer_dir}",
        "tokenized_requests=True", "num_concurrent=1", "max_retries=1", "timeout=120"])
    proc = run_tool([venv_bin("lm-eval"), "run", "--model", "local-completions",
                     "--model_args", model_args, "--batch_size", "4",
                     "--include_path", tasks, "--tasks", "llmserve_mc,llmserve_gen",
                     "--output_path", out, "--log_samples", "--seed", "1234"], timeout=900)
    return out, proc


@pytest.fixture(scope="module")
def lm_eval_remote_tokenizer_run(daemon, model_id, tmp_path_factory):
    """The multiple-choice task again with lm-eval's default tokenizer backend: it finds
    GET /tokenizer_info and POST /tokenize and tokenizes through the server."""
    tasks = tmp_path_factory.mktemp("lm_eval_tasks_remote")
    write_tasks(tasks)
    out = tmp_path_factory.mktemp("lm_eval_out_remote")
    model_args = ",".join([f"model={model_id}", f"base_url={daemon.url('/v1/completions')}",
                           "num_concurrent=1", "max_retries=1", "timeout=120"])
    proc = run_tool([venv_bin("lm-eval"), "run", "--model", "local-completions",
                     "--model_args", model_args, "--batch_size", "4",
                     "--include_path", tasks, "--tasks", "llmserve_mc",
                     "--output_path", out, "--log_samples", "--seed", "1234"], timeout=900)
    return out, proc


def test_loglikelihoods_equal_our_echo_logprobs(lm_eval_run, daemon, model_id, tokenizer_dir):
    out, _ = lm_eval_run
    tok = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    docs = samples(out, "llmserve_mc")
    assert len(docs) == 12
    worst = 0.0
    for s in docs:
        doc = s["doc"]
        assert len(s["resps"]) == len(doc["choices"])
        for choice, resp in zip(doc["choices"], s["resps"]):
            ll, greedy = float(resp[0][0]), resp[0][1] in (True, "True")
            want, want_greedy = our_loglikelihood(daemon, model_id, tok, doc["question"],
                                                  " " + choice)
            assert math.isfinite(ll) and ll < 0
            worst = max(worst, abs(ll - want))
            assert ll == pytest.approx(want, rel=0, abs=1e-6), (doc["question"], choice)
            assert greedy == want_greedy
    record_line(f"lm-eval log-likelihoods: {sum(len(s['resps']) for s in docs)} equal ours "
                f"from /v1/completions echo, largest difference {worst:.2e}")


def test_server_tokenizer_gives_the_same_loglikelihoods(lm_eval_run,
                                                        lm_eval_remote_tokenizer_run):
    remote_out, proc = lm_eval_remote_tokenizer_run
    assert "remote tokenizer" in (proc.stdout + proc.stderr).lower()
    local = {s["doc_id"]: s["resps"] for s in samples(lm_eval_run[0], "llmserve_mc")}
    remote = {s["doc_id"]: s["resps"] for s in samples(remote_out, "llmserve_mc")}
    assert local == remote


def test_generate_until_equals_direct_completion(lm_eval_run, daemon, model_id):
    out, _ = lm_eval_run
    docs = samples(out, "llmserve_gen")
    assert len(docs) == 6
    for s in docs:
        prompt = f"Question: {s['doc']['question']}\nAnswer:"
        r = requests.post(daemon.url("/v1/completions"), timeout=120, json={
            "model": model_id, "prompt": prompt, "max_tokens": MAX_GEN_TOKS, "temperature": 0,
            "stop": ["\n"], "seed": 1234})
        r.raise_for_status()
        assert s["resps"][0][0] == r.json()["choices"][0]["text"], prompt


def test_accuracy_reported(lm_eval_run):
    out, _ = lm_eval_run
    res = results(out)
    acc = res["llmserve_mc"]["acc,none"]
    em = res["llmserve_gen"]["exact_match,none"]
    assert 0.0 <= acc <= 1.0 and 0.0 <= em <= 1.0
    record_line(f"lm-eval accuracy: llmserve_mc acc {acc:.3f} "
                f"(+- {res['llmserve_mc'].get('acc_stderr,none', float('nan')):.3f}), "
                f"llmserve_gen exact_match {em:.3f}")
