"""OpenAIEmbed and PromptOllama (issue 16) through the Python API, against a local HTTP server
(http.server) that speaks the OpenAI embeddings and Ollama chat request / response shapes,
answering the first request of each with a 429 (no model server installs here)."""

import json
from typing import Any, Iterator

import numpy as np
import pytest

import lucille
from local_http import JsonHandler, serve
from lucille import Document, Pipeline, StageError


class ModelServer(JsonHandler):
    seen: list[Any] = []
    throttled: set[str] = set()

    def do_POST(self) -> None:
        body = json.loads(self.body_text())
        ModelServer.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        if self.path not in ModelServer.throttled:
            ModelServer.throttled.add(self.path)
            return self.reply(429, {"error": {"message": "Rate limit reached", "type": "requests"}})
        if self.path == "/v1/embeddings":
            if body["model"] != "all-minilm":
                return self.reply(404, {"error": {"message": f"model {body['model']!r} not found"}})
            data = [{"object": "embedding", "index": i, "embedding": [float(len(t)), 0.5, -1.0]}
                    for i, t in enumerate(body["input"])]
            return self.reply(200, {"object": "list", "data": data, "model": body["model"],
                                      "usage": {"prompt_tokens": 4, "total_tokens": 4}})
        if self.path == "/api/chat":
            user = json.loads(body["messages"][-1]["content"])
            content = json.dumps({"shout": user["title"].upper()})
            return self.reply(200, {"model": body["model"], "created_at": "2024-07-22T20:33:28Z",
                                      "message": {"role": "assistant", "content": content},
                                      "done_reason": "stop", "done": True})
        return self.reply(404, {"error": "not found"})


@pytest.fixture
def server() -> Iterator[str]:
    ModelServer.seen, ModelServer.throttled = [], set()
    with serve(ModelServer) as url:
        yield url


def test_openai_embed_and_prompt_ollama(server: str) -> None:
    p = Pipeline([
        lucille.stages.OpenAIEmbed(source="title", dest="vec", embed_document=True, embed_children=False,
                                   api_key="sk-local", url=f"{server}/v1", model_name="all-minilm",
                                   retryWaitDurationMs=1, maxRetries=2),
        lucille.stages.PromptOllama(hostURL=server, modelName="llama3.2", fields=["title"],
                                    systemPrompt="Answer in JSON.", requireJSON=True,
                                    retryWaitDurationMs=1, maxRetries=2),
    ])
    (doc,) = p.process(Document("1", {"title": "hello"}))
    np.testing.assert_array_equal(doc.get_vector("vec"), np.array([5.0, 0.5, -1.0], dtype=np.float32))
    assert doc.get("shout") == "HELLO"
    paths = [s[0] for s in ModelServer.seen]
    assert paths == ["/v1/embeddings", "/v1/embeddings", "/api/chat", "/api/chat"], "each 429 retried once"
    _, headers, body = ModelServer.seen[1]
    assert headers["authorization"] == "Bearer sk-local"
    assert body == {"model": "all-minilm", "input": ["hello"], "encoding_format": "float"}
    _, _, chat = ModelServer.seen[3]
    assert chat["format"] == "json" and chat["stream"] is False
    assert chat["messages"][0] == {"role": "system", "content": "Answer in JSON."}


def test_openai_embed_error_fails_the_document(server: str) -> None:
    p = Pipeline([lucille.stages.OpenAIEmbed(source="title", embed_document=True, embed_children=False,
                                             api_key="k", url=f"{server}/v1", model_name="nope",
                                             retryWaitDurationMs=1, maxRetries=1)])
    with pytest.raises(StageError, match="model 'nope' not found"):
        p.process(Document("1", {"title": "hello"}))
