"""GET /tokenizer_info (lm-eval's remote tokenizer reads it) and the render routes' token ids,
against Hugging Face `tokenizers` loading the tokenizer exported from the same GGUF file
(tests/reference/export_gguf_tokenizer.py: vocab, merges, special tokens, chat template)."""
import json
import subprocess
import sys

import pytest
import requests

from conftest import MODEL, ROOT

tokenizers = pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def hf_export(tmp_path_factory):
    out = tmp_path_factory.mktemp("tokenizer")
    subprocess.run([sys.executable, str(ROOT / "tests" / "reference" / "export_gguf_tokenizer.py"),
                    "--gguf", str(MODEL), "--out", str(out)], check=True, capture_output=True,
                   timeout=300)
    tok = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    config = json.loads((out / "tokenizer_config.json").read_text())
    return tok, config


def test_tokenizer_info_matches_the_hf_tokenizer(workers, hf_export):
    tok, config = hf_export
    info = requests.get(workers[0].url("/tokenizer_info"), timeout=10).json()
    for name in ("bos", "eos", "pad", "unk"):
        text = config.get(f"{name}_token")
        assert info[f"{name}_token"] == text, name
        want_id = tok.token_to_id(text) if text is not None else None
        assert info[f"{name}_token_id"] == want_id, name
    assert info["eos_token"] is not None and info["bos_token"] is not None
    assert info["chat_template"] == config["chat_template"]
    assert info["add_bos_token"] == config["add_bos_token"]
    assert info["vocab_size"] == tok.get_vocab_size()
    models = requests.get(workers[0].url("/v1/models"), timeout=10).json()["data"][0]
    assert info["model_max_length"] == models["max_model_len"]


@pytest.mark.parametrize("text", ["The capital of France is", "Numbers 12345 and ünïcödé <|im_end|>"])
def test_completion_render_tokens_equal_the_hf_encoding(workers, hf_export, text):
    tok, config = hf_export
    r = requests.post(workers[0].url("/v1/completions/render"), timeout=30,
                      json={"prompt": text, "max_tokens": 7, "temperature": 0.5})
    assert r.status_code == 200, r.text
    (rendered,) = r.json()
    want = tok.encode(text, add_special_tokens=False).ids
    if config["add_bos_token"]:
        want = [tok.token_to_id(config["bos_token"])] + want
    assert rendered["token_ids"] == want
    assert rendered["sampling_params"]["max_tokens"] == 7
    assert rendered["sampling_params"]["temperature"] == 0.5
