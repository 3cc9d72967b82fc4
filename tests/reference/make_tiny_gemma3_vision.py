#!/usr/bin/env python3
"""Makes a tiny random Gemma 3 vision-language model (Gemma3ForConditionalGeneration: SigLIP vision
tower, multi-modal projector, Gemma 3 text model) with its Gemma3Processor, and what HF
transformers computes for it in f32 — the oracles of tests/unit/vision/:

  tests/fixtures/tiny_gemma3_vision/
    config.json, model.safetensors      the model (f32): vision image_size 56, patch 14 (4 x 4
                                        patches), hidden 32, 2 heads, 2 layers; projector pools
                                        to mm_tokens_per_image 4 (2 x 2); text hidden 48, 4
                                        layers (3 local with sliding_window 3, 1 global)
    tokenizer.json, tokenizer_config.json, chat_template.jinja, preprocessor_config.json,
    processor_config.json               the processor (a 300-entry byte-level BPE with Gemma 3's
                                        special tokens, Gemma 3's chat template)
    images/*.{jpg,png,webp}             test images of several modes and sizes (RGB JPEG, RGBA /
                                        grayscale / palette / palette with a transparent entry
                                        PNG, lossy RGB and lossless RGBA WebP), made by Pillow
    pixel_values.f32                    the image processor's output for each image, in the
                                        order of expected.json "images" ([3, 56, 56] f32 each)
    vision_hidden.f32                   the vision tower's last_hidden_state for each ([16, 32])
    image_features.f32                  get_image_features' projected output for each ([4, 48])
    expected.json                       shapes, names, processor class, versions, and the chat
                                        prompts' ids / token_type_ids / greedy tokens
    expected_logits.f32                 logits at every position of every chat prompt

Run: .venv-test/bin/python tests/reference/make_tiny_gemma3_vision.py
(venv: torch transformers tokenizers pillow safetensors numpy). Deterministic: seeded.
"""
import io
import json
import pathlib

import numpy as np
import PIL
import torch
import transformers
from PIL import Image
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (AutoProcessor, Gemma3Config, Gemma3ForConditionalGeneration,
                          Gemma3TextConfig, PreTrainedTokenizerFast, SiglipVisionConfig)

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "fixtures" / "tiny_gemma3_vision"
TEMPLATE = ROOT / "fixtures" / "chat" / "templates" / "gemma3_it.jinja"
SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>",
            "<start_of_image>", "<end_of_image>", "<image_soft_token>"]
IMAGE_SIZE, PATCH, MM_TOKENS = 56, 14, 4


def make_tokenizer():
    rng = np.random.default_rng(11)
    words = ["image", "describe", "this", "what", "colour", "is", "the", "picture", "and",
             "compare", "two", "red", "green", "blue", "user", "model", "a", "of"]
    lines = [" ".join(rng.choice(words, 10)) for _ in range(400)]
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(lines, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
        unk_token="<unk>",
        extra_special_tokens={"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
                              "image_token": "<image_soft_token>"})
    fast.chat_template = TEMPLATE.read_text()
    return fast


def make_images():
    """Deterministic images: smooth gradients plus noise, so resampling has structure to keep."""
    rng = np.random.default_rng(3)

    def field(h, w, c):
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([(x * 255 // max(w - 1, 1)), (y * 255 // max(h - 1, 1)),
                         ((x + y) * 127 // max(h + w - 2, 1))], -1)[..., :c]
        if c == 4:
            base = np.concatenate([base, (x * 7 + y * 3)[..., None] % 256], -1)
        noise = rng.integers(-40, 41, (h, w, c))
        return np.clip(base + noise, 0, 255).astype(np.uint8)

    imgs = {}
    buf = io.BytesIO()
    Image.fromarray(field(48, 64, 3)).save(buf, "JPEG", quality=90)
    imgs["rgb.jpg"] = buf.getvalue()
    buf = io.BytesIO()
    rgba = field(90, 37, 3)
    alpha = rng.integers(0, 256, (90, 37, 1), dtype=np.uint8)
    Image.fromarray(np.concatenate([rgba, alpha], -1), "RGBA").save(buf, "PNG")
    imgs["rgba.png"] = buf.getvalue()
    buf = io.BytesIO()
    Image.fromarray(field(20, 20, 3)[..., 0], "L").save(buf, "PNG")
    imgs["gray.png"] = buf.getvalue()
    buf = io.BytesIO()
    Image.fromarray(field(70, 100, 3)).convert("P", palette=Image.ADAPTIVE, colors=16).save(buf,
                                                                                         "PNG")
    imgs["palette.png"] = buf.getvalue()
    buf = io.BytesIO()
    Image.fromarray(field(120, 120, 3)).save(buf, "WEBP", quality=80)
    imgs["rgb.webp"] = buf.getvalue()
    buf = io.BytesIO()
    Image.fromarray(field(56, 56, 3)).save(buf, "PNG")  # already at image_size: no resampling
    imgs["exact.png"] = buf.getvalue()
    # Transparency: composited over white by transformers' convert_to_rgb.
    buf = io.BytesIO()
    Image.fromarray(np.concatenate([field(33, 47, 3), alpha[:33, :1].repeat(47, 1)], -1),
                    "RGBA").save(buf, "WEBP", lossless=True)
    imgs["rgba.webp"] = buf.getvalue()
    buf = io.BytesIO()
    pal = Image.fromarray(field(40, 30, 3)).convert("P", palette=Image.ADAPTIVE, colors=8)
    pal.save(buf, "PNG", transparency=3)
    imgs["palette_trns.png"] = buf.getvalue()
    return imgs


def make_model(tokenizer):
    vocab = len(tokenizer)
    text = Gemma3TextConfig(
        vocab_size=vocab, hidden_size=48, intermediate_size=64, num_hidden_layers=4,
        num_attention_heads=2, num_key_value_heads=1, head_dim=32, max_position_embeddings=512,
        rms_norm_eps=1e-6, sliding_window=3,
        layer_types=["sliding_attention"] * 3 + ["full_attention"], query_pre_attn_scalar=32,
        final_logit_softcapping=None, tie_word_embeddings=True, bos_token_id=2, eos_token_id=1,
        pad_token_id=0,
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                         "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}})
    vision = SiglipVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                num_attention_heads=2, image_size=IMAGE_SIZE, patch_size=PATCH,
                                layer_norm_eps=1e-6, vision_use_head=False,
                                hidden_act="gelu_pytorch_tanh")
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIALS}
    cfg = Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=MM_TOKENS,
                       boi_token_index=ids["<start_of_image>"],
                       eoi_token_index=ids["<end_of_image>"],
                       image_token_index=ids["<image_soft_token>"], tie_word_embeddings=True)
    cfg._attn_implementation = "eager"
    cfg.text_config._attn_implementation = "eager"
    cfg.vision_config._attn_implementation = "eager"
    torch.manual_seed(5601)
    model = Gemma3ForConditionalGeneration(cfg).eval()
    torch.manual_seed(5602)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_norm" in name or "post_layernorm" in name:  # SigLIP LayerNorm: w near 1
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.1 * torch.randn_like(p))
            elif "norm" in name:  # Gemma's (1 + w) RMSNorms: w near 0
                p.copy_(0.1 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.2 * torch.randn_like(p))
            elif "position_embedding" in name or "patch_embedding" in name:
                p.copy_(0.3 * torch.randn_like(p))
            else:
                p.copy_(0.15 * torch.randn_like(p))
    return model


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "images").mkdir(exist_ok=True)
    tokenizer = make_tokenizer()
    model = make_model(tokenizer)
    model.save_pretrained(OUT, safe_serialization=True)
    (OUT / "generation_config.json").unlink(missing_ok=True)

    image_processor = transformers.Gemma3ImageProcessor(
        size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}, resample=2, do_pan_and_scan=False,
        image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5], rescale_factor=1 / 255)
    processor = transformers.Gemma3Processor(image_processor=image_processor, tokenizer=tokenizer,
                                             chat_template=tokenizer.chat_template,
                                             image_seq_length=MM_TOKENS)
    processor.save_pretrained(OUT)
    processor = AutoProcessor.from_pretrained(OUT)  # what a user of the folder gets
    ip = processor.image_processor

    imgs = make_images()
    names = sorted(imgs)
    pixels, hidden, feats = [], [], []
    for n in names:
        (OUT / "images" / n).write_bytes(imgs[n])
        pil = Image.open(OUT / "images" / n)
        pv = ip(images=[pil], return_tensors="pt")["pixel_values"]
        assert pv.shape == (1, 3, IMAGE_SIZE, IMAGE_SIZE), pv.shape
        with torch.no_grad():
            out = model.get_image_features(pixel_values=pv.float())
        pixels.append(pv[0].float().numpy())
        hidden.append(out.last_hidden_state[0].numpy())
        feats.append(out.pooler_output[0].numpy())
    np.stack(pixels).astype("<f4").tofile(OUT / "pixel_values.f32")
    np.stack(hidden).astype("<f4").tofile(OUT / "vision_hidden.f32")
    np.stack(feats).astype("<f4").tofile(OUT / "image_features.f32")

    # Chat prompts through the processor (template, placeholder expansion, token_type_ids), the
    # logits at every position and greedy tokens by repeated full forwards.
    chats = [
        (["rgb.jpg"], [{"role": "user", "content": [
            {"type": "image"}, {"type": "text", "text": "describe this picture"}]}]),
        (["palette.png", "rgb.webp"], [{"role": "user", "content": [
            {"type": "text", "text": "compare"}, {"type": "image"},
            {"type": "text", "text": "and"}, {"type": "image"},
            {"type": "text", "text": "what colour is the image"}]}]),
    ]
    prompts, all_logits = [], []
    for files, messages in chats:
        text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        pil = [Image.open(OUT / "images" / f) for f in files]
        inputs = processor(text=text, images=pil, return_tensors="pt")
        ids = inputs["input_ids"][0].tolist()
        tt = inputs["token_type_ids"][0].tolist()
        with torch.no_grad():
            logits = model(**inputs).logits[0].float().numpy()
        all_logits.append(logits)
        seq, margins = list(ids), []
        seq_tt = list(tt)
        for _ in range(8):
            with torch.no_grad():
                last = model(input_ids=torch.tensor([seq]), pixel_values=inputs["pixel_values"],
                             token_type_ids=torch.tensor([seq_tt])).logits[0, -1].numpy()
            top = np.sort(last)[-2:]
            margins.append(float(top[1] - top[0]))
            seq.append(int(np.argmax(last)))
            seq_tt.append(0)
        # Images must matter: the same prompt with another image moves the logits.
        other = processor(text=text, images=[Image.open(OUT / "images" / "gray.png")] * len(pil),
                          return_tensors="pt")
        with torch.no_grad():
            moved = np.abs(model(**other).logits[0].numpy() - logits).max()
        assert moved > 1e-2, "the image does not move the logits"
        prompts.append({"text": text, "images": files,
                        "expanded_text": text.replace(processor.boi_token,
                                                      processor.full_image_sequence),
                        "input_ids": ids, "token_type_ids": tt,
                        "greedy_tokens": seq[len(ids):], "greedy_min_margin": min(margins)})
    np.concatenate(all_logits).astype("<f4").tofile(OUT / "expected_logits.f32")

    special_ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIALS}
    expected = {
        "transformers": transformers.__version__, "torch": torch.__version__,
        "pillow": PIL.__version__, "image_processor_class": type(ip).__name__,
        "images": names, "image_size": IMAGE_SIZE, "patch_size": PATCH,
        "num_patches": (IMAGE_SIZE // PATCH) ** 2, "vision_hidden": 32,
        "mm_tokens_per_image": MM_TOKENS, "text_hidden": 48, "vocab_size": len(tokenizer),
        "special_ids": special_ids, "prompts": prompts,
    }
    (OUT / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    print("wrote", OUT, "processor", type(ip).__name__, "vocab", len(tokenizer))


if __name__ == "__main__":
    main()
