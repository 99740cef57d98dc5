"""OpenAIEmbed, PromptOllama (issue 16) and OllamaEmbed (issue 31) through the Python API,
against a local HTTP server (http.server) that speaks the OpenAI embeddings, Ollama chat and
Ollama embed request / response shapes, answering the first request of each with a 429 (no model
server installs here)."""

import json
from typing import Any, Iterator, Optional

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
        if self.path == "/api/embed":
            if body["model"] != "all-minilm":
                return self.reply(404, {"error": f"model \"{body['model']}\" not found, try pulling it first"})
            if any("too long" in t for t in body["input"]):
                return self.reply(400, {"error": "the input length exceeds the context length"})
            vectors = [[float(len(t)), 0.25, -2.0] for t in body["input"]]
            return self.reply(200, {"model": body["model"], "embeddings": vectors,
                                      "total_duration": 14143917, "load_duration": 1019500,
                                      "prompt_eval_count": 8})
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


class Texts(lucille.Connector):
    """Publishes one document per entry: `text` when the value is not None."""

    def __init__(self, texts: dict[str, Optional[str]]) -> None:
        super().__init__()
        self.texts = texts

    def execute(self, publisher: lucille.Publisher) -> None:
        for doc_id, text in self.texts.items():
            publisher.publish(Document(doc_id, {} if text is None else {"text": text}))


def ollama_embed(server: str, **extra: Any) -> dict[str, Any]:
    return {"class": "OllamaEmbed", "hostURL": server, "modelName": "all-minilm", "source": "text",
            "dest": "vec", "retryWaitDurationMs": 1, "maxRetries": 2, **extra}


def test_ollama_embed_in_a_run_stores_float32_vectors(server: str) -> None:
    r = lucille.run(config={"worker": {"threads": 1}},
                    stages=[ollama_embed(server, batchSize=4, keepAlive="1m", options={"num_ctx": 256})],
                    connector=Texts({"a": "hello", "b": "  ", "c": "ollama", "d": None}), mode="test")
    assert (r.status, r.succeeded, r.failed) == ("Success", 4, 0), r.summary
    docs = {d.id: d for d in r.documents}
    np.testing.assert_array_equal(docs["a"].get_vector("vec"), np.array([5.0, 0.25, -2.0], dtype=np.float32))
    np.testing.assert_array_equal(docs["c"].get_vector("vec"), np.array([6.0, 0.25, -2.0], dtype=np.float32))
    assert not docs["b"].has("vec") and not docs["d"].has("vec"), "blank and missing texts are not sent"
    bodies = [body for path, _, body in ModelServer.seen if path == "/api/embed"]
    assert bodies[0] == bodies[1], "the 429 was retried"
    assert [t for b in bodies[1:] for t in b["input"]] == ["hello", "ollama"]
    assert all(len(b["input"]) <= 4 for b in bodies)
    assert all(b["model"] == "all-minilm" and b["truncate"] is True and b["keep_alive"] == "1m"
               and b["options"] == {"num_ctx": 256} for b in bodies)


def test_ollama_embed_a_failed_request_fails_its_document_with_the_server_s_message(server: str) -> None:
    r = lucille.run(config={"worker": {"threads": 1}}, stages=[ollama_embed(server, batchSize=1)],
                    connector=Texts({"ok": "fine", "bad": "this one is too long"}), mode="test")
    assert (r.succeeded, r.failed) == (1, 1), r.summary
    (fail,) = [e for e in r.events if e[1] == "FAIL"]
    assert fail[0] == "bad"
    assert "HTTP 400" in (fail[2] or "") and "the input length exceeds the context length" in (fail[2] or "")
    (ok,) = r.documents
    assert ok.id == "ok" and ok.get_vector("vec") is not None
    r = lucille.run(config={"worker": {"threads": 1}}, stages=[ollama_embed(server, modelName="nope")],
                    connector=Texts({"x": "hello"}), mode="test")
    (fail,) = [e for e in r.events if e[1] == "FAIL"]
    assert 'model "nope" not found, try pulling it first' in (fail[2] or ""), fail
