"""LangChain (`langchain-openai` ChatOpenAI, unmodified) against llmserve: invoke, stream,
bind_tools with tool_choice and parallel_tool_calls, with_structured_output on a Pydantic class
(strict json_schema and function calling). A 135M model's answers are not judged: the calls are
forced (tool_choice, strict schemas: grammar-constrained) and the client-side objects checked.
"""
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field


class City(BaseModel):
    """A city and the country it is in."""
    name: str = Field(description="the city's name")
    country: str = Field(description="the country")
    population_millions: int = Field(ge=0, le=100)


@tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"sunny in {city}"


@tool
def get_time(timezone: str, hour24: bool) -> str:
    """The current time in a timezone."""
    return "12:00"


@pytest.fixture(scope="module")
def llm(base_url, model_id):
    return ChatOpenAI(model=model_id, base_url=base_url, api_key="unused", temperature=0,
                      max_tokens=12, max_retries=0, timeout=120)


def test_invoke(llm):
    msg = llm.invoke([HumanMessage("Say hello.")])
    assert isinstance(msg, AIMessage)
    assert isinstance(msg.content, str) and msg.content
    assert msg.response_metadata["finish_reason"] in ("stop", "length")
    assert msg.usage_metadata["input_tokens"] > 0
    assert 0 < msg.usage_metadata["output_tokens"] <= 12


def test_stream_equals_invoke(llm, base_url, model_id):
    streaming = ChatOpenAI(model=model_id, base_url=base_url, api_key="unused", temperature=0,
                           max_tokens=12, max_retries=0, timeout=120, stream_usage=True)
    prompt = [HumanMessage("Name a colour.")]
    chunks = list(streaming.stream(prompt))
    assert len(chunks) > 2 and all(isinstance(c, AIMessageChunk) for c in chunks)
    whole = chunks[0]
    for c in chunks[1:]:
        whole = whole + c
    assert whole.content == llm.invoke(prompt).content
    assert whole.usage_metadata["output_tokens"] > 0


def test_bind_tools_named_tool_choice(llm):
    bound = llm.bind_tools([get_weather, get_time], tool_choice="get_weather",
                           parallel_tool_calls=False)
    msg = bound.invoke("What is the weather in Paris?", max_tokens=60)
    assert len(msg.tool_calls) == 1 and not msg.invalid_tool_calls
    call = msg.tool_calls[0]
    assert call["name"] == "get_weather"
    assert set(call["args"]) == {"city"} and isinstance(call["args"]["city"], str)
    assert call["id"]
    # The tool's answer goes back as a ToolMessage; the model then answers in text.
    history = [HumanMessage("What is the weather in Paris?"), msg,
               ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"])]
    final = llm.bind_tools([get_weather, get_time]).invoke(history, max_tokens=40)
    assert isinstance(final, AIMessage)
    assert final.content or final.tool_calls


def test_bind_tools_any_parallel(llm):
    bound = llm.bind_tools([get_weather, get_time], tool_choice="any", parallel_tool_calls=True)
    msg = bound.invoke("Weather in Paris and the time in Tokyo?",
                       max_tokens=80)
    assert msg.tool_calls and not msg.invalid_tool_calls
    for call in msg.tool_calls:
        assert call["name"] in ("get_weather", "get_time")
        schema = {"get_weather": {"city": str}, "get_time": {"timezone": str, "hour24": bool}}
        assert set(call["args"]) == set(schema[call["name"]])
        for k, t in schema[call["name"]].items():
            assert isinstance(call["args"][k], t)
    assert len({c["id"] for c in msg.tool_calls}) == len(msg.tool_calls)


def test_bind_tools_no_parallel_gives_one_call(llm):
    bound = llm.bind_tools([get_weather, get_time], tool_choice="required",
                           parallel_tool_calls=False)
    msg = bound.invoke("Weather in Paris and the time in Tokyo?", max_tokens=80)
    assert len(msg.tool_calls) == 1


@pytest.mark.parametrize("method", ["json_schema", "function_calling"])
def test_with_structured_output(base_url, model_id, method):
    llm = ChatOpenAI(model=model_id, base_url=base_url, api_key="unused", temperature=0,
                     max_tokens=80, max_retries=0, timeout=120)
    structured = llm.with_structured_output(City, method=method, strict=True,
                                            include_raw=True)
    out = structured.invoke("Describe Paris.")
    assert out["parsing_error"] is None
    city = out["parsed"]
    assert isinstance(city, City)
    assert isinstance(city.name, str) and isinstance(city.population_millions, int)
    raw = out["raw"]
    assert isinstance(raw, AIMessage)
    if method == "function_calling":
        assert raw.tool_calls[0]["name"] == "City"
