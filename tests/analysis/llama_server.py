"""llama-cpp-python's OpenAI-compatible server on a GGUF, in a child process: what CALLSCOPE_LLM_ENDPOINT points at
in tests/analysis/test_served_model.py and benchmarks/served_model.py.

A cluster serves a larger model on a GPU (vLLM, llama.cpp's server, Ray Serve); here the embedded GGUF on the CPU
with the same context and threads as the local back end, so the two can be compared answer for answer.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

MODEL_ALIAS = "callscope-embedded"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def llama_server(gguf: Path, context_tokens: int, threads: int, start_timeout_s: float = 180) -> Iterator[str]:
    """The server's base URL ("http://127.0.0.1:PORT/v1") while it runs; stopped on exit. Its output goes to a
    file that a start that fails shows in the error."""
    port = _free_port()
    command = [sys.executable, "-P", "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", MODEL_ALIAS,
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(context_tokens),
               "--n_threads", str(threads), "--n_threads_batch", str(threads), "--seed", "0", "--verbose", "False"]
    with tempfile.TemporaryFile("w+") as output:
        # no PYTHONPATH: the repository's top-level operator/ folder would shadow the standard library's module
        env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
        server = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=env)
        base = f"http://127.0.0.1:{port}/v1"
        try:
            deadline = time.monotonic() + start_timeout_s
            while True:
                if server.poll() is not None or time.monotonic() > deadline:
                    output.seek(0)
                    raise RuntimeError(f"llama_cpp.server did not start: {output.read()[-2000:]}")
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                        break
                time.sleep(0.5)
            yield base
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
