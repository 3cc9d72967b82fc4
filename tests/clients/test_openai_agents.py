"""The OpenAI Agents SDK (`openai-agents`, unmodified, tracing off) against llmserve: an agent
with a strict function tool and a Pydantic output_type, run to completion on the
chat-completions model; and the same agent on the SDK's default model (the Responses API)
through the LiteLLM proxy. The first turn's tool call is forced (tool_choice "required",
grammar-constrained); the SDK resets the choice after a call, and the final output is
grammar-constrained by the output_type's strict JSON schema.
"""
import pytest
from agents import (Agent, ModelSettings, OpenAIChatCompletionsModel, OpenAIResponsesModel,
                    RunConfig, Runner, function_tool, set_tracing_disabled)
from openai import AsyncOpenAI
from pydantic import BaseModel, Field

set_tracing_disabled(True)

CALLS = []


@function_tool(strict_mode=True)
def lookup_population(city: str) -> str:
    """The population of a city, in millions."""
    CALLS.append(city)
    return "2 million. Now give the final answer."


class Answer(BaseModel):
    city: str
    population_millions: int = Field(ge=0, le=100)


def make_agent(model):
    return Agent(name="assistant", instructions="Use the tool, then answer.", model=model,
                 tools=[lookup_population], output_type=Answer,
                 model_settings=ModelSettings(tool_choice="required", temperature=0,
                                              max_tokens=80))


def check_run(result):
    assert isinstance(result.final_output, Answer)
    assert isinstance(result.final_output.population_millions, int)
    kinds = [item.type for item in result.new_items]
    assert "tool_call_item" in kinds and "tool_call_output_item" in kinds
    call = next(i for i in result.new_items if i.type == "tool_call_item")
    assert call.raw_item.name == "lookup_population"
    out = next(i for i in result.new_items if i.type == "tool_call_output_item")
    assert out.output == "2 million. Now give the final answer."
    assert kinds[-1] == "message_output_item"


def test_agent_chat_completions_model(base_url, model_id):
    client = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120)
    agent = make_agent(OpenAIChatCompletionsModel(model=model_id, openai_client=client))
    CALLS.clear()
    result = Runner.run_sync(agent, "How many people live in Paris?", max_turns=4,
                             run_config=RunConfig(tracing_disabled=True))
    check_run(result)
    assert len(CALLS) >= 1 and all(isinstance(c, str) for c in CALLS)


def test_agent_responses_model_through_litellm_proxy(litellm_proxy):
    client = AsyncOpenAI(base_url=litellm_proxy.url("/v1"), api_key=litellm_proxy.key,
                         max_retries=0, timeout=180)
    agent = make_agent(OpenAIResponsesModel(model=litellm_proxy.model_name,
                                            openai_client=client))
    CALLS.clear()
    result = Runner.run_sync(agent, "How many people live in Paris?", max_turns=4,
                             run_config=RunConfig(tracing_disabled=True))
    check_run(result)
    assert litellm_proxy.daemon_route_count("/v1/responses") > 0
