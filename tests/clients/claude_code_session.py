"""Runs Claude Code headless (the CLI bundled in the claude-agent-sdk wheel) against an
Anthropic-compatible base URL and reads its stream-json output: the API turns with their usage,
the tool calls and the tool results the CLI produced.

Claude Code's default request (12 tools, ~12k tokens of system prompt) does not fit the default
model's 8k context, so the session is cut down with the CLI's own flags: --bare (no hooks,
plugins, CLAUDE.md), --tools Read (one built-in tool), a one-line --system-prompt, and
CLAUDE_CODE_MAX_OUTPUT_TOKENS (its max_tokens, 32000 by default). The CLI still sends its
per-request billing line as the first system block.

As a script: python claude_code_session.py BASE_URL MODEL PROMPT [PROMPT...] runs one session
per prompt in one working directory and prints each turn's usage and the hit rates.
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SECRET = "pineapple"


def claude_binary() -> str:
    import claude_agent_sdk
    path = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    if not path.exists():
        raise RuntimeError(f"no bundled Claude Code CLI at {path}")
    return str(path)


def workdir() -> Path:
    d = Path(tempfile.mkdtemp(prefix="cc-session-"))
    (d / "notes.txt").write_text(f"The secret word is {SECRET}.\n")
    return d


def run_session(base_url: str, model: str, prompt: str, cwd: Path, timeout=600,
                max_turns=4) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update({
        "HOME": str(cwd),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_AUTH_TOKEN": "unused",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "256",
    })
    args = [claude_binary(), "-p", prompt, "--model", model, "--bare", "--tools", "Read",
            "--allowedTools", "Read", "--system-prompt",
            "You are a helpful assistant. Use the tools to answer.",
            "--max-turns", str(max_turns), "--output-format", "stream-json", "--verbose"]
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    turns = {}  # API message id -> {"usage", "blocks"}
    tool_results = []
    result = None
    for line in proc.stdout.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("type") == "assistant":
            msg = ev["message"]
            t = turns.setdefault(msg["id"], {"usage": msg.get("usage") or {}, "blocks": []})
            t["blocks"].extend(msg.get("content") or [])
        elif ev.get("type") == "user":
            for b in ev["message"].get("content") or []:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    tool_results.append(b)
        elif ev.get("type") == "result":
            result = ev
    return {"returncode": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr,
            "turns": list(turns.values()), "tool_results": tool_results, "result": result}


def hit_rate(turns) -> float:
    """cache_read_input_tokens over all prompt tokens (read + computed) of the turns."""
    read = sum(t["usage"].get("cache_read_input_tokens", 0) for t in turns)
    total = read + sum(t["usage"].get("input_tokens", 0) for t in turns)
    return read / total if total else 0.0


def describe(turns) -> str:
    rows = []
    for i, t in enumerate(turns):
        u = t["usage"]
        kinds = ",".join(b.get("type", "?") for b in t["blocks"])
        rows.append(f"turn {i + 1}: input_tokens {u.get('input_tokens')} cache_read "
                    f"{u.get('cache_read_input_tokens')} blocks [{kinds}]")
    return "\n".join(rows)


if __name__ == "__main__":
    base, model, *prompts = sys.argv[1:]
    d = workdir()
    everything = []
    for p in prompts:
        s = run_session(base, model, p, d)
        everything += s["turns"]
        print(f"--- session: {p!r} (exit {s['returncode']})")
        print(describe(s["turns"]))
        print(f"session hit rate {hit_rate(s['turns']):.3f}")
    print(f"overall hit rate {hit_rate(everything):.3f}")
