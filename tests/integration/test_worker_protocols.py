"""What routers and endpoint pickers written for vLLM read from an HTTP worker: vLLM's metric
names with our values, the render routes (the tokenized request), unknown request fields
ignored, and the prefix-cache reset. The routers themselves run in tests/routers."""
import requests

# Fields the field's routers add to request bodies (vllm-router injects SGLang's, PD routers
# add kv_transfer_params / bootstrap_*): a worker ignores them.
ROUTER_FIELDS = {
    "no_stop_trim": False, "separate_reasoning": True, "stream_reasoning": True,
    "include_reasoning": True, "return_hidden_states": False,
    "kv_transfer_params": {"do_remote_decode": False, "do_remote_prefill": False,
                           "remote_engine_id": None, "remote_block_ids": None},
    "bootstrap_host": "10.0.0.1", "bootstrap_port": 8998, "bootstrap_room": 12345,
    "some_future_router_field": {"nested": [1, 2, 3]},
}


def post(daemon, path, body):
    r = requests.post(daemon.url(path), json=body, timeout=120)
    assert r.status_code == 200, (path, r.status_code, r.text)
    return r.json()


def test_vllm_metric_names_carry_our_values(daemon, model_id):
    post(daemon, "/v1/completions", {"prompt": "Metrics under two names " * 4, "max_tokens": 3,
                                      "temperature": 0})
    s = daemon.scrape()
    labels = {"engine": "0", "model_name": model_id}
    same = {
        "vllm:num_requests_running": "llmserve_requests_running",
        "vllm:num_requests_waiting": "llmserve_requests_waiting",
        "vllm:kv_cache_usage_perc": "llmserve_kv_cache_usage_ratio",
        "vllm:gpu_cache_usage_perc": "llmserve_kv_cache_usage_ratio",
        "vllm:prefix_cache_queries_total": "llmserve_prefix_cache_queries_total",
        "vllm:prefix_cache_hits_total": "llmserve_prefix_cache_hits_total",
        "vllm:prompt_tokens_total": "llmserve_prompt_tokens_total",
        "vllm:generation_tokens_total": "llmserve_generation_tokens_total",
        "vllm:num_preemptions_total": "llmserve_preemptions_total",
    }
    for vllm_name, ours in same.items():
        assert s.value(vllm_name, **labels) == s.value(ours), vllm_name
    assert s.value("vllm:prompt_tokens_total", **labels) > 0
    assert s.value("vllm:request_success_total", finished_reason="length", **labels) == \
        s.value("llmserve_requests_finished_total", reason="length")
    info = [dict(k) for (n, k), v in s.samples.items() if n == "vllm:cache_config_info"]
    assert len(info) == 1 and info[0]["block_size"] == "16"
    assert int(info[0]["num_gpu_blocks"]) == s.value("llmserve_kv_cache_blocks_total")
    lora = [dict(k) for (n, k), v in s.samples.items() if n == "vllm:lora_requests_info"]
    assert lora and {"running_lora_adapters", "waiting_lora_adapters", "max_lora"} <= set(lora[0])
    assert s.value("vllm:time_to_first_token_seconds_count", **labels) == \
        s.value("llmserve_time_to_first_token_seconds_count")


def test_vllm_names_can_be_turned_off(start_daemon):
    d = start_daemon("--metrics.vllm-names=false", "--threads", "1")
    s = d.scrape()
    assert not [n for (n, _) in s.samples if n.startswith("vllm:")]
    assert s.has("llmserve_requests_running")


def test_render_routes_return_the_tokenized_request(daemon, model_id):
    messages = [{"role": "user", "content": "Render me."}]
    chat = post(daemon, "/v1/chat/completions/render",
                {"model": model_id, "messages": messages, "max_tokens": 9, "stream": True,
                 "temperature": 0.3, "stop": ["\n"], "seed": 7})
    tokenized = post(daemon, "/tokenize", {"messages": messages})["tokens"]
    assert chat["token_ids"] == tokenized
    assert chat["request_id"].startswith("chatcmpl-") and chat["model"] == model_id
    assert chat["stream"] is True and chat["stream_options"] is not None
    p = chat["sampling_params"]
    assert (p["max_tokens"], p["temperature"], p["stop"], p["seed"]) == (9, 0.3, ["\n"], 7)

    prompts = ["First prompt", "Second, longer prompt"]
    comp = post(daemon, "/v1/completions/render", {"model": model_id, "prompt": prompts})
    assert [c["token_ids"] for c in comp] == \
        [post(daemon, "/tokenize", {"prompt": t})["tokens"] for t in prompts]
    assert comp[0]["request_id"] != comp[1]["request_id"]
    ids = post(daemon, "/v1/completions/render", {"prompt": [5, 6, 7]})
    assert ids[0]["token_ids"] == [5, 6, 7]
    bad = requests.post(daemon.url("/v1/completions/render"), json={"prompt": "x",
                                                                    "temperature": -1}, timeout=30)
    assert bad.status_code == 400 and "temperature" in bad.json()["error"]["message"]


def test_unknown_request_fields_are_ignored_on_every_route(daemon, model_id):
    comp = {"model": model_id, "prompt": "Routers add fields:", "max_tokens": 6, "temperature": 0}
    chat = {"model": model_id, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 6,
            "temperature": 0}
    for path, body, text in [
            ("/v1/completions", comp, lambda j: j["choices"][0]["text"]),
            ("/v1/chat/completions", chat, lambda j: j["choices"][0]["message"]["content"]),
            ("/v1/completions/render", comp, lambda j: j[0]["token_ids"]),
            ("/v1/chat/completions/render", chat, lambda j: j["token_ids"]),
            ("/tokenize", {"prompt": "Routers add fields:"}, lambda j: j["tokens"])]:
        plain = text(post(daemon, path, body))
        assert text(post(daemon, path, {**body, **ROUTER_FIELDS})) == plain, path
    # Streamed too.
    r = requests.post(daemon.url("/v1/completions"), json={**comp, **ROUTER_FIELDS,
                                                           "stream": True}, timeout=120)
    assert r.status_code == 200 and "[DONE]" in r.text


def test_reset_prefix_cache_drops_the_cached_blocks(daemon):
    post(daemon, "/v1/completions", {"prompt": "Cache me please. " * 10, "max_tokens": 2})
    assert daemon.wait_metric("llmserve_prefix_cache_blocks", lambda v: v > 0) > 0
    assert post(daemon, "/reset_prefix_cache", {}) == {"success": True}
    assert daemon.wait_metric("llmserve_prefix_cache_blocks", 0) == 0
