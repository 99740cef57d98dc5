"""A second, independent implementation of what the Embed stage computes, for the tests and
bench/embed: BERT WordPiece tokenization in plain Python (from vocab.txt, not tokenizer.json),
the safetensors file read by hand, and the BERT encoder, mean pooling and L2 normalisation in
NumPy (float64). Slow, but shares no code with the Rust stage (tokenizers crate + candle)."""

from __future__ import annotations

import json
import math
import pathlib
import struct
import unicodedata

import numpy as np


def load_safetensors(path: pathlib.Path) -> dict[str, np.ndarray]:
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        arr = np.frombuffer(data[base + start : base + end], dtype=dtypes[meta["dtype"]])
        out[name] = arr.reshape(meta["shape"]).astype(np.float64)
    return out


def _is_punct(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


class WordPiece:
    """BERT's uncased basic tokenizer + greedy longest-match WordPiece."""

    def __init__(self, vocab_path: pathlib.Path, max_len: int):
        tokens = vocab_path.read_text(encoding="utf-8").split("\n")
        self.vocab = {t: i for i, t in enumerate(tokens) if t}
        self.max_len = max_len

    def _basic(self, text: str) -> list[str]:
        cleaned = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch).startswith("C") and ch not in "\t\n\r"):
                continue
            if ch.isspace() or unicodedata.category(ch) == "Zs":
                cleaned.append(" ")
            elif _is_cjk(cp):
                cleaned.append(f" {ch} ")
            else:
                cleaned.append(ch)
        words = []
        for word in "".join(cleaned).split():
            word = unicodedata.normalize("NFD", word.lower())
            word = "".join(c for c in word if unicodedata.category(c) != "Mn")
            current = ""
            for ch in word:
                if _is_punct(ch):
                    if current:
                        words.append(current)
                    words.append(ch)
                    current = ""
                else:
                    current += ch
            if current:
                words.append(current)
        return words

    def encode(self, text: str) -> list[int]:
        ids = []
        for word in self._basic(text):
            if len(word) > 100:
                ids.append(self.vocab["[UNK]"])
                continue
            pieces, start = [], 0
            while start < len(word):
                end, found = len(word), None
                while start < end:
                    piece = word[start:end] if start == 0 else "##" + word[start:end]
                    if piece in self.vocab:
                        found = self.vocab[piece]
                        break
                    end -= 1
                if found is None:
                    pieces = [self.vocab["[UNK]"]]
                    break
                pieces.append(found)
                start = end
            ids.extend(pieces)
        ids = ids[: self.max_len - 2]
        return [self.vocab["[CLS]"], *ids, self.vocab["[SEP]"]]


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    out: np.ndarray = (x - mean) / np.sqrt(var + eps) * w + b
    return out


_erf = np.vectorize(math.erf)


class Reference:
    def __init__(self, folder: pathlib.Path):
        folder = pathlib.Path(folder)
        self.config = json.loads((folder / "config.json").read_text())
        max_len = json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
        self.tokenizer = WordPiece(folder / "vocab.txt", max_len)
        self.w = load_safetensors(folder / "model.safetensors")

    def embed(self, text: str) -> np.ndarray:
        w, c = self.w, self.config
        ids = self.tokenizer.encode(text)
        n = len(ids)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        heads = c["num_attention_heads"]
        hd = c["hidden_size"] // heads
        for i in range(c["num_hidden_layers"]):
            p = f"encoder.layer.{i}."

            def lin(name: str, v: np.ndarray) -> np.ndarray:
                out: np.ndarray = v @ w[p + name + ".weight"].T + w[p + name + ".bias"]
                return out

            q = lin("attention.self.query", x).reshape(n, heads, hd).transpose(1, 0, 2)
            k = lin("attention.self.key", x).reshape(n, heads, hd).transpose(1, 0, 2)
            v = lin("attention.self.value", x).reshape(n, heads, hd).transpose(1, 0, 2)
            s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            ctx = (s @ v).transpose(1, 0, 2).reshape(n, heads * hd)
            a = _layer_norm(
                lin("attention.output.dense", ctx) + x,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
            )
            h = lin("intermediate.dense", a)
            h = 0.5 * h * (1.0 + _erf(h / math.sqrt(2.0)))
            x = _layer_norm(
                lin("output.dense", h) + a,
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
            )
        pooled = x.mean(0)
        out: np.ndarray = pooled / np.linalg.norm(pooled)
        return out
