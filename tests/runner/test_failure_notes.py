"""What a failed run says became of its answers (issue 38 §11): a server that fails
part-way through says so in one line, and the lines under it tell the truth about the
answers it gave: kept in the response cache (the same command goes on from them), or,
under --no-cache, lost."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hakari.cli import app
from tests.helpers.http_doubles import Reply, Seen, StubServer, chat, completion

runner = CliRunner()


def failing_server(servers: list[StubServer], answers: int) -> str:
    """Answers `answers` prompts, then HTTP 500 forever."""
    count = itertools.count()

    def respond(seen: Seen) -> Reply:
        if next(count) >= answers:
            return Reply(500, {"error": "boom"})
        chatting = seen.path.endswith("chat/completions")
        return Reply(body=chat(" 0") if chatting else completion(" 0"))

    server = StubServer(respond, model="m-fail", record=False)
    servers.append(server)
    return f"openai:m-fail@{server.url}"


@pytest.mark.parametrize("cached", [True, False])
def test_a_failed_model_says_what_became_of_its_answers(
    servers: list[StubServer], tmp_path: Path, cached: bool
) -> None:
    spec = failing_server(servers, answers=4)
    cache = ["--cache-dir", str(tmp_path / "cache")] if cached else ["--no-cache"]
    result = runner.invoke(
        app,
        ["run", "-m", "fake:0", "-m", spec, "--tasks", "demo_sentiment_en", "--decoding",
         "greedy", "--max-attempts", "1", "--concurrency", "1", "--n-boot", "0",
         "--output", str(tmp_path / "run"), *cache],
    )  # fmt: skip
    out = " ".join(result.output.split())
    assert result.exit_code == 2, out
    error = next(line for line in result.output.splitlines() if line.startswith("error: "))
    assert "HTTP 500" in error and "cache" not in error, error  # the server knows no cache
    assert "results of the 1 model(s) that finished (fake:0) were saved" in out
    if cached:
        assert f"the answers {spec} generated so far are in the response cache" in out
    else:
        assert f"this run used --no-cache, so the answers {spec} generated are lost" in out
        assert "response cache" not in out
