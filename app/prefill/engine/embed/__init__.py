"""Embedding and reranking models through llama.cpp's embedding mode (no Qt).

`model.EmbeddingModel` loads a GGUF whose pooling (mean, CLS, last, rank) its header gives and turns
texts into vectors, or a query and documents into scores; `bert_gguf` writes a Hugging Face BERT
checkpoint (safetensors and tokenizer.json) as llama.cpp's `bert` GGUF; `bundled` finds the
all-MiniLM-L6-v2 package and converts it once into the cache (`--model bundled-embed`).
Errors: `errors.NotAnEmbeddingModel`, `errors.InputTooLong`, `errors.ConversionError`.
"""
