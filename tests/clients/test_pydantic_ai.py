"""pydantic-ai (`OpenAIChatModel`, unmodified) against llmserve: an agent's structured output in
tool output mode (a forced final_result call) and native output mode (response_format strict
json_schema), and native output beside a function tool (tools and response_format in one
request, tool_choice auto). The outputs are Pydantic objects of the declared type.
"""
import pytest
from pydantic import BaseModel, Field
from pydantic_ai import Agent, NativeOutput, ToolOutput
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

SETTINGS = {"max_tokens": 80, "temperature": 0}


class City(BaseModel):
    name: str
    country: str
    population_millions: int = Field(ge=0, le=100)


@pytest.fixture(scope="module")
def model(base_url, model_id):
    return OpenAIChatModel(model_id, provider=OpenAIProvider(base_url=base_url, api_key="unused"))


def test_tool_output_mode(model):
    agent = Agent(model, output_type=ToolOutput(City, name="final_result"),
                  model_settings=SETTINGS)
    result = agent.run_sync("Describe Paris.")
    assert isinstance(result.output, City)
    calls = [p for m in result.all_messages() for p in getattr(m, "parts", [])
             if p.part_kind == "tool-call"]
    assert calls and calls[0].tool_name == "final_result"
    assert result.usage.output_tokens > 0


def test_native_output_mode(model):
    agent = Agent(model, output_type=NativeOutput(City), model_settings=SETTINGS)
    result = agent.run_sync("Describe Paris.")
    assert isinstance(result.output, City)
    assert isinstance(result.output.population_millions, int)


def test_native_output_beside_a_function_tool(model):
    agent = Agent(model, output_type=NativeOutput(City), model_settings=SETTINGS)
    looked_up = []

    @agent.tool_plain
    def country_of(city: str) -> str:
        """The country a city is in."""
        looked_up.append(city)
        return "France"

    result = agent.run_sync("Describe Paris.")
    assert isinstance(result.output, City)
    assert all(isinstance(c, str) for c in looked_up)
