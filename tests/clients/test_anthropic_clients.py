"""Anthropic's Messages API (/v1/messages) with the clients built on it, unmodified from PyPI:
LangChain's ChatAnthropic (invoke, stream, bind_tools) and Claude Code itself, headless, in a
session that calls a tool and answers from its result (tests/clients/claude_code_session.py).
A 135M model's words are not judged: tool calls are forced where the client allows it, and the
client-side objects, the CLI's own tool run and the usage it reports are checked."""
import json
from pathlib import Path

import pytest
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import tool

from claude_code_session import SECRET, describe, hit_rate, run_session, workdir
from conftest import ROOT, Daemon, serve_available

CC_MODEL = "llmserve-local"


@tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"sunny in {city}"


@pytest.fixture(scope="module")
def chat(daemon, model_id):
    return ChatAnthropic(model=model_id, base_url=daemon.url(""), api_key="unused",
                         max_tokens=12, max_retries=0, timeout=120,
                         model_kwargs={"extra_body": {"temperature": 0}})


def test_langchain_invoke_and_stream(chat):
    msg = chat.invoke([HumanMessage("Say hello.")])
    assert isinstance(msg, AIMessage) and isinstance(msg.content, str) and msg.content
    assert msg.response_metadata["stop_reason"] in ("end_turn", "max_tokens")
    assert msg.usage_metadata["output_tokens"] > 0
    chunks = list(chat.stream([HumanMessage("Say hello.")]))
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    total = chunks[0]
    for c in chunks[1:]:
        total = total + c
    text = total.content if isinstance(total.content, str) else "".join(
        p.get("text", "") for p in total.content if isinstance(p, dict))
    assert text == msg.content  # greedy: the stream and the plain call agree


def test_langchain_bind_tools_loop(chat):
    chat = chat.model_copy(update={"max_tokens": 60})
    llm = chat.bind_tools([get_weather], tool_choice="get_weather")
    q = HumanMessage("What is the weather in Paris?")
    msg = llm.invoke([q])
    assert len(msg.tool_calls) == 1 and msg.tool_calls[0]["name"] == "get_weather"
    assert isinstance(msg.tool_calls[0]["args"].get("city"), str)
    streamed = None
    for c in llm.stream([q]):
        streamed = c if streamed is None else streamed + c
    assert streamed.tool_calls[0]["args"] == msg.tool_calls[0]["args"]
    result = get_weather.invoke(msg.tool_calls[0]["args"])
    answer = chat.bind_tools([get_weather]).invoke(
        [q, msg, ToolMessage(result, tool_call_id=msg.tool_calls[0]["id"])])
    assert isinstance(answer, AIMessage)


def cc_daemon(extra=()):
    why = serve_available()
    if why:
        pytest.skip(why)
    # Claude Code sends no temperature: greedy by the model's default sampling, so the session
    # is the same every run.
    return Daemon(("--threads", "2", "--server.served-model-name", CC_MODEL,
                   "--model.default-sampling", "temperature=0") + tuple(extra)).wait_ready()


@pytest.fixture(scope="module")
def claude_code_daemon():
    d = cc_daemon()
    yield d
    d.stop()


@pytest.fixture(scope="module")
def keep_all_lines_daemon(tmp_path_factory):
    """server.anthropic_strip_system_lines: [] (a config file: the flag takes no empty list)."""
    text = (ROOT / "config" / "default.yaml").read_text()
    line = '  anthropic_strip_system_lines: ["x-anthropic-billing-header:"]\n'
    assert line in text
    cfg = tmp_path_factory.mktemp("cfg") / "keep.yaml"
    cfg.write_text(text.replace(line, "  anthropic_strip_system_lines: []\n"))
    d = cc_daemon(("--config", str(cfg)))
    yield d
    d.stop()


FIRST = "Read the file notes.txt and tell me the secret word."
# Differs from FIRST where Claude Code's billing line takes its per-conversation suffix from.
SECOND = "Please read notes.txt and tell me the secret word."


_reported = []


def report(name, turns):
    """Appends to build/test-logs/claude_code_prefix_cache.txt (new each test session)."""
    path = ROOT / "build" / "test-logs" / "claude_code_prefix_cache.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "a" if _reported else "w"
    _reported.append(name)
    with open(path, mode) as f:
        f.write(f"--- {name}\n{describe(turns)}\nhit rate {hit_rate(turns):.3f}\n")
    print(f"{name}: prefix-cache hit rate {hit_rate(turns):.3f}\n{describe(turns)}")


def test_claude_code_session_with_tool_round_trip(claude_code_daemon):
    d = workdir()
    s = run_session(claude_code_daemon.url(""), CC_MODEL, FIRST, d)
    assert s["returncode"] == 0, s["stderr"][-3000:] + s["stdout"][-3000:]
    assert s["result"] and s["result"]["subtype"] == "success", s["result"]
    assert not s["result"].get("is_error"), s["result"]
    calls = [b for t in s["turns"] for b in t["blocks"] if b.get("type") == "tool_use"]
    assert calls and calls[0]["name"] == "Read"
    assert Path(d / calls[0]["input"]["file_path"]).resolve() == (d / "notes.txt").resolve()
    # The CLI ran the tool and sent its result back in the next request.
    results = [r for r in s["tool_results"] if r["tool_use_id"] == calls[0]["id"]]
    assert results and SECRET in json.dumps(results[0]["content"])
    assert len(s["turns"]) >= 2
    report("claude code session", s["turns"])
    first, later = s["turns"][0]["usage"], s["turns"][1:]
    first_prompt = first["input_tokens"] + first["cache_read_input_tokens"]
    for t in later:
        # Each later turn extends the conversation: at least the earlier prompt's full blocks
        # (16 tokens each) are read from the prefix cache, not computed again.
        assert t["usage"]["cache_read_input_tokens"] >= first_prompt // 16 * 16 - 16


def second_conversation_reuse(daemon):
    d = workdir()
    a = run_session(daemon.url(""), CC_MODEL, FIRST, d)
    b = run_session(daemon.url(""), CC_MODEL, SECOND, d)
    assert a["turns"] and b["turns"], (a["stderr"][-2000:], b["stderr"][-2000:])
    u = b["turns"][0]["usage"]
    return u["cache_read_input_tokens"], u["cache_read_input_tokens"] + u["input_tokens"], b


def test_volatile_billing_line_does_not_spoil_reuse(claude_code_daemon, keep_all_lines_daemon):
    stripped, total, b = second_conversation_reuse(claude_code_daemon)
    kept, kept_total, _ = second_conversation_reuse(keep_all_lines_daemon)
    report("second conversation, billing line stripped", b["turns"])
    print(f"second conversation's first turn: {stripped}/{total} prompt tokens from the cache "
          f"with the line stripped, {kept}/{kept_total} with it kept")
    # Kept, the line's per-conversation suffix sits in the first cache blocks: nothing past
    # the line's start is shared. Stripped, the system prompt and the tools (all but the user's
    # turn) are.
    assert kept <= 16
    assert stripped > total // 2
