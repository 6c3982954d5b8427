"""all-MiniLM-L6-v2 run in numpy from the package's own files: the reference the converted GGUF's
vectors are checked against. Written apart from the converter (its own safetensors reading, its own
WordPiece), so a fault in one is not repeated in the other."""

from __future__ import annotations

import json
import math
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_erf = np.frompyfunc(math.erf, 1, 1)


@dataclass
class MiniLM:
    weights: dict[str, np.ndarray]
    vocab: dict[str, int]
    heads: int
    layers: int
    eps: float

    @classmethod
    def from_zip(cls, path: Path) -> MiniLM:
        with zipfile.ZipFile(path) as z:
            blob = z.read("model.safetensors")
            config = json.loads(z.read("config.json"))
            vocab = json.loads(z.read("tokenizer.json"))["model"]["vocab"]
        (n,) = struct.unpack("<Q", blob[:8])
        header = json.loads(blob[8 : 8 + n])
        body = blob[8 + n :]
        weights = {
            k: np.frombuffer(body[v["data_offsets"][0] : v["data_offsets"][1]], dtype="<f4").reshape(v["shape"])
            for k, v in header.items() if k != "__metadata__" and v["dtype"] == "F32"
        }
        return cls(weights, vocab, config["num_attention_heads"], config["num_hidden_layers"], config["layer_norm_eps"])

    # --- tokens ------------------------------------------------------------------------
    def tokenize(self, text: str) -> list[int]:
        """[CLS] WordPiece(text) [SEP], for lower-case-able ASCII text (what the tests use)."""
        words: list[str] = []
        for chunk in text.lower().split():
            word = ""
            for ch in chunk:
                if not ch.isalnum():
                    words += [word] if word else []
                    words.append(ch)
                    word = ""
                else:
                    word += ch
            words += [word] if word else []
        ids = [self.vocab["[CLS]"]]
        for w in words:
            pieces, start = [], 0
            while start < len(w):
                end = len(w)
                while end > start and (("##" if start else "") + w[start:end]) not in self.vocab:
                    end -= 1
                if end == start:
                    pieces = [self.vocab["[UNK]"]]
                    break
                pieces.append(self.vocab[("##" if start else "") + w[start:end]])
                start = end
            ids += pieces
        return ids + [self.vocab["[SEP]"]]

    # --- the forward pass ----------------------------------------------------------------
    def hidden(self, ids: list[int]) -> np.ndarray:
        """The last layer's hidden states (tokens × 384). Every token is of type 0, as llama.cpp feeds them."""
        w = self.weights
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][: len(ids)]
             + w["embeddings.token_type_embeddings.weight"][0]).astype(np.float64)
        x = self._norm(x, "embeddings.LayerNorm")
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            q, k, v = (self._linear(x, p + f"attention.self.{n}") for n in ("query", "key", "value"))
            t, d = x.shape[0], x.shape[1] // self.heads
            q, k, v = (a.reshape(t, self.heads, d).transpose(1, 0, 2) for a in (q, k, v))
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(d)
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            attended = (scores @ v).transpose(1, 0, 2).reshape(t, -1)
            x = self._norm(x + self._linear(attended, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            h = self._linear(x, p + "intermediate.dense")
            h = 0.5 * h * (1.0 + _erf(h / math.sqrt(2.0)).astype(np.float64))
            x = self._norm(x + self._linear(h, p + "output.dense"), p + "output.LayerNorm")
        return x

    def embed(self, text: str) -> np.ndarray:
        """Mean of the hidden states, scaled to unit length (sentence-transformers' Pooling + Normalize)."""
        v = self.hidden(self.tokenize(text)).mean(axis=0)
        return v / np.linalg.norm(v)

    def rank(self, ids: list[int], head_w: np.ndarray, head_b: np.ndarray) -> float:
        """A reranker's score: BERT's pooler (tanh over the [CLS] row), then the head's first output."""
        cls = self.hidden(ids)[0]
        pooled = np.tanh(self._linear(cls[None, :], "pooler.dense"))[0]
        return float(head_w[0] @ pooled + head_b[0])

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.weights[name + ".weight"].T.astype(np.float64) + self.weights[name + ".bias"]

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(var + self.eps) * self.weights[name + ".weight"] + self.weights[name + ".bias"]
