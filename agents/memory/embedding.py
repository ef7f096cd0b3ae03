"""The embedding model behind `memory_search`'s meaning half: WordLlama's static
embeddings (MIT, `wordllama` on PyPI), whose default model ships inside the wheel
(`wordllama/weights/l2_supercat_256.safetensors`, 16 MB, and its tokenizer file).

A static embedding is a lookup table: a text's vector is the mean of its tokens'
vectors, so it runs on any CPU at thousands of sections a second, with no model hub,
no GPU and nothing fetched. The files are read straight from the installed package
with the library's own classes: `WordLlama.load()` looks for the tokenizer in a folder
the wheel does not have and would then download it, so it is never called.

The model loads on first use (a search that needs it), once per process, never at
start: numpy, tokenizers and wordllama are imported only then. When it cannot load,
`embed` returns None from then on and ONE warning is logged; search then ranks by
keywords only and says so.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

MODEL_NAME = "wordllama-l2_supercat-256"  # stored in each index: a new model re-embeds
WEIGHTS = "weights/l2_supercat_256.safetensors"
TOKENIZER = "l2_supercat_tokenizer_config.json"
QUERY_SECONDS = 2.0  # indexing (keywords, then meaning) a search may do before answering
EMBED_CHARS = 2_000  # a section's meaning is read from its first characters
BATCH = 64  # texts per call: padding is to the longest of a batch


def load_wordllama() -> Any:
    """WordLlama's bundled default model, from the installed package's own files."""
    root = logging.getLogger()
    guard = logging.NullHandler()
    if not root.handlers:  # wordllama calls logging.basicConfig() at import: keep ours
        root.addHandler(guard)
    try:
        import wordllama
        from safetensors import safe_open
        from wordllama.inference import WordLlamaInference
        from wordllama.tokenizers import tokenizer_from_file
    finally:
        root.removeHandler(guard)
    weights = Path(wordllama.__file__).parent / WEIGHTS
    with safe_open(str(weights), framework="np", device="cpu") as f:
        table = f.get_tensor("embedding.weight")
    return WordLlamaInference(table, tokenizer_from_file(TOKENIZER))


class Embedder:
    """The model, loaded once on first `embed`; None from `embed` when it cannot load."""

    def __init__(self, loader: Callable[[], Any] = load_wordllama, name: str = MODEL_NAME):
        self.name = name
        self._loader = loader
        self._lock = threading.Lock()
        self._model: Any = None
        self.failed: str | None = None  # why it could not load, once it could not

    def ready(self) -> bool:
        """Loads the model if it is not loaded yet; False when it cannot load."""
        with self._lock:
            if self._model is None and self.failed is None:
                try:
                    self._model = self._loader()
                except Exception as exc:  # any failure: degrade, do not crash a search
                    self.failed = f"{type(exc).__name__}: {exc}"[:300]
                    log.warning(
                        "memory search by meaning is off: the embedding model did not load "
                        "(%s); memory_search ranks by keywords only",
                        self.failed,
                    )
            return self._model is not None

    def embed(self, texts: list[str]) -> np.ndarray | None:
        """Unit vectors (float32, one row a text), or None when the model is unavailable."""
        if not self.ready():
            return None
        import numpy as np

        cut = [t[:EMBED_CHARS] for t in texts]
        order = sorted(range(len(cut)), key=lambda i: len(cut[i]))  # little padding
        vectors = self._model.embed([cut[i] for i in order], batch_size=BATCH)
        out = np.empty_like(vectors)
        out[order] = vectors
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.asarray(out / np.maximum(norms, 1e-9), dtype=np.float32)


#: the process's model, shared by every agent's index (one copy in memory)
MODEL = Embedder()
