"""LiteLLM (unmodified) against llmserve: the SDK with `openai/<model>` and our api_base
(completion, streaming, a forced tool call, a Pydantic response_format, text_completion), and
the proxy (`litellm --config`, model `openai/<model>` at our api_base) under the openai SDK:
chat, streaming, tools, and /v1/responses (LiteLLM's Responses path).
"""
import json

import litellm
import openai
import pytest
from pydantic import BaseModel, Field

litellm.telemetry = False

WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"], "additionalProperties": False}}}


class City(BaseModel):
    name: str
    population_millions: int = Field(ge=0, le=100)


@pytest.fixture(scope="module")
def sdk(base_url, model_id):
    return {"model": f"openai/{model_id}", "api_base": base_url, "api_key": "unused",
            "temperature": 0, "num_retries": 0, "timeout": 120}


def test_sdk_completion_and_stream(sdk):
    messages = [{"role": "user", "content": "Name a colour."}]
    r = litellm.completion(messages=messages, max_tokens=10, **sdk)
    text = r.choices[0].message.content
    assert isinstance(text, str) and text
    assert r.usage.completion_tokens > 0 and r.usage.prompt_tokens > 0
    chunks = list(litellm.completion(messages=messages, max_tokens=10, stream=True, **sdk))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert streamed == text
    assert chunks[-1].choices[0].finish_reason in ("stop", "length") or any(
        c.choices[0].finish_reason for c in chunks)


def test_sdk_forced_tool_call(sdk):
    r = litellm.completion(messages=[{"role": "user", "content": "Weather in Paris?"}],
                           tools=[WEATHER_TOOL], max_tokens=60,
                           tool_choice={"type": "function", "function": {"name": "get_weather"}},
                           **sdk)
    calls = r.choices[0].message.tool_calls
    assert len(calls) == 1 and calls[0].function.name == "get_weather"
    assert isinstance(json.loads(calls[0].function.arguments)["city"], str)
    assert r.choices[0].finish_reason == "tool_calls"


def test_sdk_pydantic_response_format(sdk):
    r = litellm.completion(messages=[{"role": "user", "content": "Describe Paris."}],
                           response_format=City, max_tokens=60, **sdk)
    city = City.model_validate_json(r.choices[0].message.content)
    assert isinstance(city.population_millions, int)


def test_sdk_text_completion(sdk, openai_client, model_id):
    r = litellm.text_completion(prompt="The capital of France is", max_tokens=6, **sdk)
    ours = openai_client.completions.create(model=model_id, prompt="The capital of France is",
                                            max_tokens=6, temperature=0)
    assert r.choices[0].text == ours.choices[0].text


@pytest.fixture(scope="module")
def proxy_client(litellm_proxy):
    return openai.OpenAI(base_url=litellm_proxy.url("/v1"), api_key=litellm_proxy.key,
                         max_retries=0, timeout=180)


def test_proxy_chat_stream_and_tools(proxy_client, litellm_proxy, openai_client, model_id):
    assert litellm_proxy.model_name in [m.id for m in proxy_client.models.list().data]
    messages = [{"role": "user", "content": "Name a colour."}]
    r = proxy_client.chat.completions.create(model=litellm_proxy.model_name, messages=messages,
                                             max_tokens=10, temperature=0)
    direct = openai_client.chat.completions.create(model=model_id, messages=messages,
                                                   max_tokens=10, temperature=0)
    assert r.choices[0].message.content == direct.choices[0].message.content
    stream = proxy_client.chat.completions.create(model=litellm_proxy.model_name,
                                                  messages=messages, max_tokens=10,
                                                  temperature=0, stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == \
        direct.choices[0].message.content
    t = proxy_client.chat.completions.create(
        model=litellm_proxy.model_name, max_tokens=60, temperature=0, tools=[WEATHER_TOOL],
        tool_choice="required", messages=[{"role": "user", "content": "Weather in Paris?"}])
    assert t.choices[0].message.tool_calls[0].function.name == "get_weather"


def test_proxy_responses(proxy_client, litellm_proxy):
    before = litellm_proxy.daemon_route_count("/v1/responses")
    r = proxy_client.responses.create(model=litellm_proxy.model_name, input="Name a colour.",
                                      max_output_tokens=16, temperature=0)
    assert r.status in ("completed", "incomplete")
    assert isinstance(r.output_text, str) and r.output_text
    assert litellm_proxy.daemon_route_count("/v1/responses") > before
