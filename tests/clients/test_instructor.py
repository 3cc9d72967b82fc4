"""instructor (unmodified) against llmserve, over the openai SDK: a Pydantic response_model in
the TOOLS (a forced named call) and JSON_SCHEMA (strict response_format) modes, and a partial
stream; the results are instances of the model. (Mode.JSON only asks for a JSON object and
describes the schema in the prompt: nothing constrains a 135M model to follow it.)
"""
import instructor
import openai
import pytest
from pydantic import BaseModel, Field


class City(BaseModel):
    name: str
    country: str
    population_millions: int = Field(ge=0, le=100)


@pytest.mark.parametrize("mode", [instructor.Mode.TOOLS, instructor.Mode.JSON_SCHEMA])
def test_response_model(base_url, model_id, mode):
    client = instructor.from_openai(
        openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120),
        mode=mode)
    city, completion = client.chat.completions.create_with_completion(
        model=model_id, response_model=City, max_retries=0, max_tokens=80, temperature=0,
        messages=[{"role": "user", "content": "Describe Paris."}])
    assert isinstance(city, City)
    assert isinstance(city.population_millions, int)
    assert completion.usage.completion_tokens > 0


def test_partial_stream(base_url, model_id):
    """create_partial: streamed tool-call arguments give partial objects, the last complete."""
    client = instructor.from_openai(
        openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120),
        mode=instructor.Mode.TOOLS)
    parts = list(client.chat.completions.create_partial(
        model=model_id, response_model=City, max_retries=0, max_tokens=80, temperature=0,
        messages=[{"role": "user", "content": "Describe Paris."}]))
    assert parts
    last = City.model_validate(parts[-1].model_dump())
    assert isinstance(last.population_millions, int)
