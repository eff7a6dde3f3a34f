"""`hakari run` at a real terminal (issue 38 §11): run under a pseudo-terminal and read
back through a VT100 emulator (`tests/helpers/terminal.py`), nothing the run prints is
overwritten by the progress display's redraws, and each finished bar is on the screen
once. Two slow stub servers stand in for the models, so that the display redraws many
times while the tables print."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.helpers.http_doubles import Reply, Seen, StubServer, chat, completion
from tests.helpers.terminal import screen_of

STALL = 0.02  # seconds per answer: the display redraws 10 times a second


def slow_server(servers: list[StubServer], model: str) -> str:
    def respond(seen: Seen) -> Reply:
        chatting = seen.path.endswith("/chat/completions")
        return Reply(body=chat(" 0") if chatting else completion(" 0"), stall=STALL)

    server = StubServer(respond, model=model, record=False)
    servers.append(server)
    return f"openai:{model}@{server.url}"


@pytest.mark.slow
def test_lines_under_the_tables_stay_and_finished_bars_print_once(
    servers: list[StubServer], tmp_path: Path
) -> None:
    specs = [slow_server(servers, "m-one"), slow_server(servers, "m-two")]
    code, lines = screen_of(
        [sys.executable, "-m", "hakari", "run", "-m", specs[0], "-m", specs[1],
         "--tasks", "demo_sentiment_en,demo_sentiment_ja", "--limit", "6",
         "--decoding", "greedy", "--concurrency", "1", "--no-cache", "--n-boot", "50",
         "--output", str(tmp_path / "run")]
    )  # fmt: skip
    screen = "\n".join(lines)
    assert code == 0, screen
    # the line under each model × task's table
    counts = [bool(re.fullmatch(r"36 generated, 0 from cache, \d+\.\d s", line)) for line in lines]
    assert sum(counts) == 4, screen
    for spec in specs:  # a status line said while the first model's bars were live
        assert lines.count(f"loading {spec} …") == 1, screen
        port = spec.rsplit(":", 1)[1].split("/")[0]
        bars = [line for line in lines if port in line and "━" in line]
        assert len(bars) == 2 and all(line.endswith(" done") for line in bars), screen
    assert any(line.startswith("results: ") for line in lines), screen
