"""Images in, text out: a daemon started on the HF folder tests/fixtures/tiny_gemma3_vision (a
tiny random Gemma3ForConditionalGeneration made by tests/reference/make_tiny_gemma3_vision.py).

The oracle is transformers: the fixture's expected.json holds, for two chat prompts (one image,
two images), the processor's token ids and the greedy tokens of
Gemma3ForConditionalGeneration.generate. The unmodified openai SDK sends the images as base64
data: URLs in chat image_url parts and Responses input_image parts, the anthropic SDK as base64
image blocks; the reply's tokens (the bytes of each, from chat logprobs) and usage must equal
transformers'. Then the prefix cache: a second turn reuses the blocks holding the image (hits in
/metrics), the same prompt with another image does not; the encoder runs once per image. Bad
input gets a 400 naming the part, and no KV block stays held."""
import base64
import json
import time
from pathlib import Path

import pytest
import requests

from conftest import ROOT

openai = pytest.importorskip("openai")
tokenizers = pytest.importorskip("tokenizers")

FIXTURE = ROOT / "tests" / "fixtures" / "tiny_gemma3_vision"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text())
MEDIA = {".jpg": "image/jpeg", ".png": "image/png", ".webp": "image/webp"}


def data_url(name: str) -> str:
    path = FIXTURE / "images" / name
    return (f"data:{MEDIA[path.suffix]};base64,"
            + base64.b64encode(path.read_bytes()).decode())


def b64(name: str) -> str:
    return base64.b64encode((FIXTURE / "images" / name).read_bytes()).decode()


def token_bytes_oracle():
    """Bytes of each token id by the fixture's tokenizer (HF tokenizers, byte-level BPE: each
    character of a token's text stands for one byte, GPT-2's mapping)."""
    tok = tokenizers.Tokenizer.from_file(str(FIXTURE / "tokenizer.json"))
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    chars = {b: b for b in printable}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = 256 + extra
            extra += 1
    to_byte = {chr(c): b for b, c in chars.items()}

    def of(token_id):
        text = tok.id_to_token(token_id)
        if all(ch in to_byte for ch in text):
            return bytes(to_byte[ch] for ch in text)
        return text.encode()  # a special token
    return of


TOKEN_BYTES = token_bytes_oracle()
PROMPT1 = EXPECTED["prompts"][0]  # <image>describe this picture, rgb.jpg
PROMPT2 = EXPECTED["prompts"][1]  # compare<image>and<image>what colour..., palette.png, rgb.webp


def chat_content(prompt, url_of=data_url):
    """The chat content parts that the fixture's template renders to prompt["text"]."""
    if prompt is PROMPT1:
        return [{"type": "image_url", "image_url": {"url": url_of("rgb.jpg")}},
                {"type": "text", "text": "describe this picture"}]
    return [{"type": "text", "text": "compare"},
            {"type": "image_url", "image_url": {"url": url_of("palette.png")}},
            {"type": "text", "text": "and"},
            {"type": "image_url", "image_url": {"url": url_of("rgb.webp")}},
            {"type": "text", "text": "what colour is the image"}]


def reply_bytes(choice):
    return [bytes(c.bytes) for c in choice.logprobs.content]


def expected_bytes(prompt, n):
    return [TOKEN_BYTES(t) for t in prompt["greedy_tokens"][:n]]


@pytest.fixture(scope="module")
def vision(start_daemon_module):
    return start_daemon_module


@pytest.fixture(scope="module")
def start_daemon_module():
    from conftest import Daemon, serve_available
    why = serve_available()
    if why:
        pytest.skip(why)
    d = Daemon(("--kv-cache-bytes", "64MiB", "--threads", "2"), model=FIXTURE)
    try:
        d.wait_ready()
    except RuntimeError:
        d.stop()
        raise
    yield d
    d.stop()


@pytest.fixture(scope="module")
def vclient(vision):
    return openai.OpenAI(base_url=vision.url("/v1"), api_key="unused", max_retries=0, timeout=120)


def wait_idle(daemon, timeout=30):
    """Until no KV block is held (every block free or only cached)."""
    end = time.time() + timeout
    while time.time() < end:
        if daemon.metric("llmserve_kv_cache_usage_ratio") == 0:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("prompt", [PROMPT1, PROMPT2], ids=["one_image", "two_images"])
def test_chat_base64_images_give_transformers_greedy_tokens(vclient, prompt):
    n = len(prompt["greedy_tokens"])
    r = vclient.chat.completions.create(
        model="tiny_gemma3_vision", messages=[{"role": "user", "content": chat_content(prompt)}],
        max_tokens=n, temperature=0, logprobs=True)
    assert r.usage.prompt_tokens == len(prompt["input_ids"])
    assert r.usage.completion_tokens == n
    assert reply_bytes(r.choices[0]) == expected_bytes(prompt, n)


def test_streamed_chat_gives_the_same_tokens(vclient):
    n = len(PROMPT2["greedy_tokens"])
    stream = vclient.chat.completions.create(
        model="tiny_gemma3_vision", messages=[{"role": "user", "content": chat_content(PROMPT2)}],
        max_tokens=n, temperature=0, stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    want = b"".join(expected_bytes(PROMPT2, n)).decode()
    assert text == want


def test_responses_input_image(vclient):
    n = len(PROMPT2["greedy_tokens"])
    content = [{"type": "input_text", "text": "compare"},
               {"type": "input_image", "image_url": data_url("palette.png")},
               {"type": "input_text", "text": "and"},
               {"type": "input_image", "image_url": data_url("rgb.webp")},
               {"type": "input_text", "text": "what colour is the image"}]
    r = vclient.responses.create(model="tiny_gemma3_vision",
                                 input=[{"role": "user", "content": content}],
                                 max_output_tokens=n, temperature=0)
    assert r.usage.input_tokens == len(PROMPT2["input_ids"])
    assert r.output_text == b"".join(expected_bytes(PROMPT2, n)).decode()


def test_anthropic_image_blocks(vision):
    anthropic = pytest.importorskip("anthropic")
    claude = anthropic.Anthropic(base_url=vision.base_url, api_key="unused", max_retries=0)
    n = len(PROMPT2["greedy_tokens"])

    def image(name):
        return {"type": "image", "source": {"type": "base64", "media_type": MEDIA[Path(name).suffix],
                                            "data": b64(name)}}
    m = claude.messages.create(
        model="tiny_gemma3_vision", max_tokens=n, extra_body={"temperature": 0},
        messages=[{"role": "user", "content": [
            {"type": "text", "text": "compare"}, image("palette.png"), {"type": "text", "text": "and"},
            image("rgb.webp"), {"type": "text", "text": "what colour is the image"}]}])
    # Anthropic's input_tokens leave out what the prefix cache served (the chat tests above
    # sent the same prompt and images): the two together are the prompt.
    assert m.usage.input_tokens + (m.usage.cache_read_input_tokens or 0) == len(PROMPT2["input_ids"])
    assert "".join(b.text for b in m.content if b.type == "text") == (
        b"".join(expected_bytes(PROMPT2, n)).decode())
    # A corrupt image block: a 400 naming the block, in Anthropic's shape.
    bad = image("rgb.webp")
    bad["source"]["data"] = b64("rgb.webp")[:200]
    with pytest.raises(anthropic.BadRequestError) as e:
        claude.messages.create(model="tiny_gemma3_vision", max_tokens=2, messages=[
            {"role": "user", "content": [{"type": "text", "text": "look"}, bad]}])
    assert "messages[0].content[1]" in str(e.value)


def test_prefix_cache_reuses_the_image_blocks_and_never_another_images(vision, vclient):
    def ask(messages):
        return vclient.chat.completions.create(model="tiny_gemma3_vision", messages=messages,
                                               max_tokens=4, temperature=0)

    first = [{"role": "user", "content": chat_content(PROMPT1)}]
    before = vision.scrape()
    reply = ask(first).choices[0].message.content
    mid = vision.scrape()
    # Block 0 (16 tokens) holds the image's rows 7-10: the second turn's prompt starts with the
    # first's, so that block (and its image) comes from the cache.
    second = first + [{"role": "assistant", "content": reply},
                      {"role": "user", "content": "and the colours?"}]
    r2 = ask(second)
    after = vision.scrape()
    assert after.rose(mid, "llmserve_prefix_cache_hits_total") >= 16
    assert r2.usage.prompt_tokens_details.cached_tokens >= 16
    # The same text and tokens with another image: its blocks hash differently, nothing shared.
    other = [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": data_url("gray.png")}},
        {"type": "text", "text": "describe this picture"}]}]
    r3 = ask(other)
    after3 = vision.scrape()
    assert r3.usage.prompt_tokens == len(PROMPT1["input_ids"])
    assert after3.rose(after, "llmserve_prefix_cache_hits_total") == 0
    # The first image again: its block hits, and the encoder does not run again for it.
    r4 = ask(first)
    after4 = vision.scrape()
    assert after4.rose(after3, "llmserve_prefix_cache_hits_total") >= 16
    assert r4.usage.prompt_tokens_details.cached_tokens >= 16
    assert after4.rose(after3, "llmserve_images_encoded_total") == 0
    assert after4.rose(after3, "llmserve_image_cache_hits_total") >= 1
    # Over the four requests: rgb.jpg and gray.png encoded once each at most.
    assert after4.rose(before, "llmserve_images_encoded_total") <= 2


def post_chat(daemon, content, **extra):
    body = {"model": "tiny_gemma3_vision", "max_tokens": 2, "messages": [{"role": "user", "content": content}]}
    body.update(extra)
    return requests.post(daemon.url("/v1/chat/completions"), json=body, timeout=60)


def error_of(r):
    assert r.status_code == 400, r.text
    return r.json()["error"]


def test_bad_images_are_400s_naming_the_part_and_hold_no_kv(vision):
    assert wait_idle(vision)
    png = (FIXTURE / "images" / "palette.png").read_bytes()
    cases = {
        "truncated": "data:image/png;base64," + base64.b64encode(png[:300]).decode(),
        "not an image": "data:image/png;base64," + base64.b64encode(b"hello world").decode(),
        "bad base64": "data:image/png;base64,@@@@",
        "not base64": "data:image/png,rawbytes",
        "url not allowed": "https://example.com/cat.png",
        "file url": "file:///etc/passwd",
    }
    for why, url in cases.items():
        r = post_chat(vision, [{"type": "text", "text": "look"},
                               {"type": "image_url", "image_url": {"url": url}}])
        e = error_of(r)
        assert e["param"] == "messages[0].content[1]", (why, e)
        if why == "url not allowed":
            assert "allowed_media_domains" in e["message"]
    # The second image of a message, in the second message.
    r = post_chat(vision, "x")  # warm: a text-only request still works
    assert r.status_code == 200
    body = {"model": "tiny_gemma3_vision", "max_tokens": 2, "messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
        {"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": data_url("rgb.jpg")}},
            {"type": "image_url", "image_url": {"url": cases["truncated"]}}]}]}
    e = error_of(requests.post(vision.url("/v1/chat/completions"), json=body, timeout=60))
    assert e["param"] == "messages[2].content[1]"
    # More images than server.max_images_per_request (8).
    many = [{"type": "image_url", "image_url": {"url": data_url("gray.png")}}] * 9
    e = error_of(post_chat(vision, many))
    assert "max_images_per_request" in e["message"]
    # The text spelling the image placeholder: refused, not mistaken for an image.
    e = error_of(post_chat(vision, [{"type": "text", "text": "<start_of_image> sneaky"},
                                    {"type": "image_url", "image_url": {"url": data_url("gray.png")}}]))
    assert e["param"] == "messages"
    # Responses: the part named as the Responses body has it.
    r = requests.post(vision.url("/v1/responses"), timeout=60, json={
        "model": "tiny_gemma3_vision", "max_output_tokens": 2, "input": [{"role": "user", "content": [
            {"type": "input_text", "text": "look"},
            {"type": "input_image", "image_url": cases["truncated"]}]}]})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == "input[0].content[1]"
    assert wait_idle(vision)


def test_a_model_without_vision_says_so(daemon):
    r = post_chat(daemon, [{"type": "text", "text": "look"},
                           {"type": "image_url", "image_url": {"url": data_url("gray.png")}}])
    e = error_of(r)
    assert e["param"] == "messages[0].content[1]"
    assert "images are not accepted: this model has no vision tower" in e["message"]


def test_image_urls_of_an_allowed_host_are_fetched(start_daemon, tmp_path):
    """server.allowed_media_domains: a local HTTP server on 127.0.0.1 serves the fixture image;
    allowed, the URL gives the same tokens as the data: URL; a host not listed is a 400."""
    import http.server
    import threading

    images = FIXTURE / "images"

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=str(images), **k)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        port = srv.server_address[1]
        d = start_daemon("--kv-cache-bytes", "64MiB", "--threads", "2",
                         "--server.allowed-media-domains", "127.0.0.1", model=FIXTURE)
        c = openai.OpenAI(base_url=d.url("/v1"), api_key="unused", max_retries=0, timeout=120)
        n = len(PROMPT1["greedy_tokens"])
        r = c.chat.completions.create(
            model="tiny_gemma3_vision", max_tokens=n, temperature=0, logprobs=True,
            messages=[{"role": "user", "content": chat_content(
                PROMPT1, url_of=lambda name: f"http://127.0.0.1:{port}/{name}")}])
        assert reply_bytes(r.choices[0]) == expected_bytes(PROMPT1, n)
        e = error_of(post_chat(d, [{"type": "image_url", "image_url": {
            "url": f"http://localhost:{port}/rgb.jpg"}}]))
        assert e["param"] == "messages[0].content[0]"
        assert "allowed_media_domains" in e["message"]
        e = error_of(post_chat(d, [{"type": "image_url", "image_url": {
            "url": f"http://127.0.0.1:{port}/missing.png"}}]))
        assert "404" in e["message"]
    finally:
        srv.shutdown()
