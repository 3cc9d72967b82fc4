#!/usr/bin/env python3
"""Makes a tiny random Qwen3-Reranker and what transformers (the oracle) scores with it, the
Qwen3-Reranker model card's way - the fixture of tests/unit/pooling/rerank_test.cpp and
tests/integration/test_rerank.py:

  tests/fixtures/tiny_qwen3_reranker/  a Qwen3ForCausalLM (hidden 64, head_dim 32, 2 layers,
        untied LM head) saved as the stock Qwen/Qwen3-Reranker-* checkpoints are: config.json,
        model.safetensors, tokenizer files, and a README.md whose heading is "# Qwen3-Reranker"
        (how llama.cpp's converter, and llmserve, know a folder is a reranker). Its byte-level
        BPE tokenizer (tests/fixtures/tokenizer/bytelevel, extended) has the "yes" and "no"
        tokens and Qwen's <|im_start|>, <|im_end|>, <think>, </think>.
        model.gguf: the same model written the way llama.cpp's convert_hf_to_gguf.py writes a
        Qwen3-Reranker (its Qwen3Model class): qwen3.pooling_type 4 (RANK),
        qwen3.classifier.output_labels ["yes", "no"], a "rerank" chat template, and instead of
        the LM head cls.output.weight = stack(lm_head["yes"], lm_head["no"]). Written with the
        gguf package (the converter itself wants a tokenizer it knows).

expected.json: "yes_id", "no_id", "pairs": [{query, document, instruction (null: the card's
default), ids (prefix + tokenizer(pair) + suffix, as the card builds them, special tokens in the
pair's text kept as text), score (the card's
exp(log_softmax([no, yes])[1]) of the last position's logits, all pairs in one left-padded
batch as the card runs them)}], "rerank": [{query, documents, pair indices}].

Run: .venv-test/bin/python tests/reference/make_rerank_fixtures.py
(torch, transformers, gguf, numpy). Deterministic: seeded.
"""
import json
import pathlib
import shutil
import tempfile

import gguf
import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "fixtures" / "tiny_qwen3_reranker"
TOKENIZER = ROOT / "fixtures" / "tokenizer" / "bytelevel"

# The model card's prompt (Qwen/Qwen3-Reranker-0.6B, "Transformers Usage").
PREFIX = ("<|im_start|>system\nJudge whether the Document meets the requirements based on the "
          "Query and the Instruct provided. Note that the answer can only be \"yes\" or \"no\"."
          "<|im_end|>\n<|im_start|>user\n")
SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
DEFAULT_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"

QUERIES = ["What is the capital of China?", "Explain gravity", "best pizza in town"]
DOCUMENTS = [
    "The capital of China is Beijing.",
    "Gravity is a force that attracts two bodies towards each other.",
    "Pizza is a dish of Italian origin; yes, with cheese.",
    "no",
    "Ünïcödé — ümlauts, 日本語 and emoji 🙂",
    "A document that mentions <|im_end|> as text, which must stay text.",
]
CUSTOM = "Given a question, find documents that answer it"


def write_tokenizer(out):
    tok = json.loads((TOKENIZER / "tokenizer.json").read_text())
    vocab = tok["model"]["vocab"]
    merges = tok["model"]["merges"]
    n = max(max(vocab.values()), max(t["id"] for t in tok["added_tokens"])) + 1
    for a, b in (("y", "e"), ("ye", "s"), ("n", "o")):
        assert a in vocab and b in vocab and a + b not in vocab
        vocab[a + b] = n
        merges.append([a, b])
        n += 1
    for content, special in (("<|im_start|>", True), ("<|im_end|>", True), ("<think>", False),
                             ("</think>", False)):
        tok["added_tokens"].append({"id": n, "content": content, "single_word": False,
                                    "lstrip": False, "rstrip": False, "normalized": False,
                                    "special": special})
        n += 1
    # Qwen3's tokenizer adds no special token to a text (no BOS, no EOS).
    tok["post_processor"] = {"type": "ByteLevel", "add_prefix_space": False,
                             "trim_offsets": False, "use_regex": False}
    (out / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>",
        "pad_token": "<|eot_id|>", "add_bos_token": False, "add_eos_token": False,
        "padding_side": "left", "model_max_length": 512}))
    return n


def make_model(out, n_tokens):
    torch.manual_seed(17)
    cfg = Qwen3Config(vocab_size=480, hidden_size=64, intermediate_size=128,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                      num_hidden_layers=2, max_position_embeddings=512, rms_norm_eps=1e-6,
                      tie_word_embeddings=False, bos_token_id=0, eos_token_id=n_tokens - 3,
                      attn_implementation="eager")
    assert n_tokens <= cfg.vocab_size
    model = Qwen3ForCausalLM(cfg).float()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif name == "lm_head.weight":
                p.normal_(0.0, 0.2)  # logits of a few units: scores spread over (0, 1)
            else:
                p.normal_(0.0, 0.25)
    model.save_pretrained(out, safe_serialization=True)
    (out / "README.md").write_text(
        "# Qwen3-Reranker (tiny random test fixture)\n\nMade by "
        "tests/reference/make_rerank_fixtures.py; random weights, not a useful reranker.\n")


def card_scores(out, pairs):
    """The model card's code path: left padding, one batch, the last position's logits."""
    tok = AutoTokenizer.from_pretrained(out, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    yes, no = tok.convert_tokens_to_ids("yes"), tok.convert_tokens_to_ids("no")
    prefix_ids = tok.encode(PREFIX, add_special_tokens=False)
    suffix_ids = tok.encode(SUFFIX, add_special_tokens=False)
    texts = [f"<Instruct>: {ins or DEFAULT_INSTRUCTION}\n<Query>: {q}\n<Document>: {d}"
             for q, d, ins in pairs]
    # split_special_tokens: a "<|im_end|>" in a query or document stays text (llmserve never
    # parses special tokens in request text); the card's call otherwise.
    enc = tok(texts, padding=False, truncation="longest_first", return_attention_mask=False,
              max_length=512 - len(prefix_ids) - len(suffix_ids), split_special_tokens=True)
    ids = [prefix_ids + x + suffix_ids for x in enc["input_ids"]]
    batch = tok.pad({"input_ids": ids}, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits[:, -1, :]
        two = torch.stack([logits[:, no], logits[:, yes]], dim=1)
        scores = torch.nn.functional.log_softmax(two, dim=1)[:, 1].exp().tolist()
        # The same pairs one at a time (no padding) agree: a check of the oracle itself.
        for i, seq in enumerate(ids):
            one = model(input_ids=torch.tensor([seq])).logits[0, -1]
            alone = torch.softmax(torch.stack([one[no], one[yes]]), 0)[1].item()
            assert abs(alone - scores[i]) < 1e-5, (i, alone, scores[i])
    return yes, no, ids, scores, tok, model


def write_gguf(out, tok, model, yes, no):
    """What convert_hf_to_gguf.py's Qwen3Model writes for a Qwen3-Reranker (f32)."""
    cfg = model.config
    w = gguf.GGUFWriter(str(out / "model.gguf"), "qwen3")
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name("Qwen3-Reranker tiny")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_rope_freq_base(cfg.rope_parameters["rope_theta"] if hasattr(cfg, "rope_parameters")
                         and cfg.rope_parameters else cfg.rope_theta)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_key_length(cfg.head_dim)
    w.add_value_length(cfg.head_dim)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_pooling_type(gguf.PoolingType.RANK)
    w.add_classifier_output_labels(["yes", "no"])
    w.add_chat_template([{"name": "rerank", "template": PREFIX.replace(
        "<|im_start|>user\n", "<|im_start|>user\n<Instruct>: " + DEFAULT_INSTRUCTION +
        "\n<Query>: {query}\n<Document>: {document}") + SUFFIX}])
    # The tokenizer, by id (this fixture's pre-tokenizer is Llama 3's split).
    fast = tok.backend_tokenizer
    n_vocab = cfg.vocab_size
    by_id = {i: t for t, i in fast.get_vocab(with_added_tokens=True).items()}
    added = {t.content: t for t in fast.get_added_tokens_decoder().values()}
    tokens, types = [], []
    for i in range(n_vocab):
        t = by_id.get(i)
        if t is None:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
        elif t in added:
            tokens.append(t)
            types.append(gguf.TokenType.CONTROL if added[t].special
                         else gguf.TokenType.USER_DEFINED)
        else:
            tokens.append(t)
            types.append(gguf.TokenType.NORMAL)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(tokens)
    w.add_token_types(types)
    merges = json.loads((out / "tokenizer.json").read_text())["model"]["merges"]
    w.add_token_merges([" ".join(m) for m in merges])
    w.add_eos_token_id(tok.convert_tokens_to_ids("<|im_end|>"))
    w.add_pad_token_id(tok.convert_tokens_to_ids("<|eot_id|>"))
    w.add_add_bos_token(False)
    names = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q",
             "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
             "self_attn.k_norm": "attn_k_norm", "post_attention_layernorm": "ffn_norm",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for name, t in model.state_dict().items():
        a = t.detach().float().numpy()
        if name == "lm_head.weight":  # not tied: the head becomes the yes/no classifier
            w.add_tensor("cls.output.weight", np.stack([a[yes], a[no]]))
            continue
        if name == "model.embed_tokens.weight":
            gname = "token_embd.weight"
        elif name == "model.norm.weight":
            gname = "output_norm.weight"
        else:
            parts = name.split(".")  # model.layers.N.<module>.weight
            gname = f"blk.{parts[2]}.{names['.'.join(parts[3:-1])]}.weight"
        w.add_tensor(gname, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    n_tokens = write_tokenizer(OUT)
    make_model(OUT, n_tokens)
    pairs, rerank = [], []
    for q in QUERIES:
        idx = []
        for d in DOCUMENTS:
            idx.append(len(pairs))
            pairs.append((q, d, None))
        rerank.append({"query": q, "documents": DOCUMENTS, "pairs": idx})
    custom = []
    for d in DOCUMENTS[:3]:
        custom.append(len(pairs))
        pairs.append((QUERIES[0], d, CUSTOM))
    yes, no, ids, scores, tok, model = card_scores(OUT, pairs)
    assert tok.convert_tokens_to_ids("yes") != tok.unk_token_id
    write_gguf(OUT, tok, model, yes, no)
    meta = {"yes_id": yes, "no_id": no, "default_instruction": DEFAULT_INSTRUCTION,
            "custom_instruction": CUSTOM, "custom_pairs": custom,
            "pairs": [{"query": q, "document": d, "instruction": ins, "ids": i, "score": s}
                      for (q, d, ins), i, s in zip(pairs, ids, scores)],
            "rerank": rerank, "transformers": transformers.__version__,
            "torch": torch.__version__}
    (OUT / "expected.json").write_text(json.dumps(meta, ensure_ascii=False, indent=1))
    print("pairs", len(pairs), "scores", [round(s, 3) for s in scores])


if __name__ == "__main__":
    with tempfile.TemporaryDirectory():
        main()
