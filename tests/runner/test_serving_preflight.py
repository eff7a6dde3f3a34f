"""Decoding × prompt format × endpoint combinations a server cannot serve are one line
(exit 2) before any prompt of the run is sent (issue 15, defect 3: loglik on a chat
endpoint used to fail after greedy and constrained had run, and wrote nothing).

What a server accepts is asked with one tiny probe request a capability (a 2-token regex
answer, an echoed prompt's log-probs, a list of two prompts), only for the decodings
and options the run uses; what no server can do (log-likelihood through a chat
endpoint) needs no request at all."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import hakari
from hakari.backends.serving import ServingOptions
from hakari.errors import HakariInputError
from tests.helpers.cli import assert_one_line, invoke
from tests.helpers.http_doubles import Reply, Seen, StubServer, chat, completion, completions

TASK = "demo_sentiment_en"


def serve(servers: list[StubServer], respond: object) -> StubServer:
    server = StubServer(respond)  # type: ignore[arg-type]
    servers.append(server)
    return server


def capable(seen: Seen) -> Reply:
    """A server that applies regexes (answers the probe's), echoes log-probs, takes lists."""
    regex = (seen.body.get("structured_outputs") or {}).get("regex")
    text = regex if regex is not None and regex.isalnum() else " positive"
    if seen.path.endswith("/chat/completions"):
        return Reply(body=chat(text))
    prompt = seen.body["prompt"]
    if isinstance(prompt, list):
        return Reply(body=completions([text] * len(prompt)))
    if seen.body.get("echo"):
        tokens = [*re.findall(r"\s*\w+|\s*[^\w\s]", prompt), "!"]  # words, marks
        offsets = [sum(len(t) for t in tokens[:i]) for i in range(len(tokens))]
        logprobs = {"tokens": tokens, "token_logprobs": [None] + [-1.0] * (len(tokens) - 1),
                    "text_offset": offsets, "top_logprobs": None}  # fmt: skip
        body = completion(prompt + "!", finish="length", logprobs=logprobs)
        body["usage"] = {"prompt_tokens": len(tokens) - 1, "completion_tokens": 1}
        return Reply(body=body)
    return Reply(body=completion(text))


def run(server: StubServer, tmp_path: Path, decodings: list[str], **kwargs: object) -> None:
    hakari.evaluate(
        models=[f"openai:stub-model@{server.url}"],
        tasks=[TASK],
        decodings=decodings,
        limit=1,
        output_dir=tmp_path / "run",
        use_cache=False,
        n_boot=0,
        progress=False,
        **kwargs,  # type: ignore[arg-type]
    )


def task_prompts_sent(server: StubServer) -> int:
    """Requests carrying one of the task's prompts (the probes carry none)."""
    return sum("Review:" in str(s.body) or "review" in str(s.body) for s in server.generations())


def test_loglik_through_a_chat_endpoint_needs_no_request_to_refuse(
    servers: list[StubServer], tmp_path: Path
) -> None:
    server = serve(servers, capable)
    for prompt_format in ("auto", "chat"):
        with pytest.raises(HakariInputError, match="--prompt-format completion"):
            run(server, tmp_path, ["greedy", "constrained", "loglik"], prompt_format=prompt_format)
    assert not server.generations()  # not one prompt, not one probe
    assert not (tmp_path / "run").exists()
    code, out = invoke(
        "--model", f"openai:stub-model@{server.url}", "--tasks", TASK,
        "--decoding", "greedy,constrained,loglik", "--limit", "1",
    )  # fmt: skip
    assert_one_line(code, out, "--prompt-format completion")
    assert not server.generations()


NUMBER_TASK = """\
name: tiny_scores
language: en
target: score
answer_type: number
fallback: {kind: number, value: 2.0}
metrics: [pearson]
templates:
  - id: 0-0
    prompt: "Rate {text} from 0 to 5:"
    regex: "[0-5]"
data:
  instances:
    - {text: good, score: 4.0}
    - {text: bad, score: 1.0}
"""


def test_loglik_is_not_refused_when_no_task_would_score_it(
    servers: list[StubServer], tmp_path: Path
) -> None:
    """loglik scores label tasks only: on a number task it is skipped, so a chat
    endpoint is no obstacle to the rest of the run."""
    server = serve(servers, capable)
    task = tmp_path / "tiny_scores.yaml"
    task.write_text(NUMBER_TASK, encoding="utf-8")
    hakari.evaluate(
        models=[f"openai:stub-model@{server.url}"],
        tasks=[str(task)],
        decodings=["greedy", "loglik"],
        output_dir=tmp_path / "run",
        use_cache=False,
        n_boot=0,
        progress=False,
    )
    assert (tmp_path / "run" / "results.json").is_file()


@pytest.mark.parametrize("prompt_format", ["completion", "auto"])
def test_a_server_that_rejects_the_regex_field_is_refused_before_the_run(
    servers: list[StubServer], tmp_path: Path, prompt_format: str
) -> None:
    def respond(seen: Seen) -> Reply:
        if "structured_outputs" in seen.body:
            return Reply(
                422, {"detail": "Unexpected fields in the request: {'structured_outputs'}"}
            )
        return capable(seen)

    server = serve(servers, respond)
    with pytest.raises(HakariInputError, match="cannot apply regex constraints"):
        run(server, tmp_path, ["greedy", "constrained"], prompt_format=prompt_format)
    assert len(server.generations()) == 1 and task_prompts_sent(server) == 0  # the probe
    endpoint = "/chat/completions" if prompt_format == "auto" else "/completions"
    assert server.generations()[0].path.endswith(endpoint)  # the endpoint the run would use


def test_a_server_that_ignores_the_regex_field_is_refused_before_the_run(
    servers: list[StubServer], tmp_path: Path
) -> None:
    """vLLM ignores a body field it does not know (SGLang's `regex`): the probe's answer
    does not match its regex, so constraints would silently not apply."""
    server = serve(servers, lambda seen: Reply(body=completion("-1")))
    with pytest.raises(HakariInputError, match=r"ignored.*--regex-field"):
        run(
            server, tmp_path, ["constrained"], prompt_format="completion",
            serving=ServingOptions(regex_field="regex"),
        )  # fmt: skip
    assert len(server.generations()) == 1 and server.generations()[0].body["regex"] == "7"


def test_a_server_without_echo_logprobs_is_refused_before_the_run(
    servers: list[StubServer], tmp_path: Path
) -> None:
    """`transformers serve` ignores `logprobs`: log-likelihood cannot be scored."""
    server = serve(servers, lambda seen: Reply(body=completion(" positive")))
    with pytest.raises(HakariInputError, match="cannot score continuations"):
        run(server, tmp_path, ["greedy", "loglik"], prompt_format="completion")
    (probe,) = server.generations()
    assert probe.body["echo"] is True and task_prompts_sent(server) == 0


def test_a_server_that_takes_one_prompt_per_request_is_refused_before_the_run(
    servers: list[StubServer], tmp_path: Path
) -> None:
    def respond(seen: Seen) -> Reply:
        if isinstance(seen.body.get("prompt"), list):
            return Reply(400, {"error": {"message": "prompt must be a string."}})
        return capable(seen)

    server = serve(servers, respond)
    with pytest.raises(HakariInputError, match="--prompts-per-request 1"):
        run(
            server, tmp_path, ["greedy"], prompt_format="completion",
            serving=ServingOptions(prompts_per_request=8),
        )  # fmt: skip
    assert len(server.generations()) == 1 and task_prompts_sent(server) == 0


def test_a_capable_server_passes_the_probes_and_runs(
    servers: list[StubServer], tmp_path: Path
) -> None:
    server = serve(servers, capable)
    run(
        server, tmp_path, ["greedy", "constrained", "loglik"], prompt_format="completion",
        serving=ServingOptions(prompts_per_request=4),
    )  # fmt: skip
    probes = len(server.generations()) - task_prompts_sent(server)
    assert probes == 3  # regex, echo log-probs, a list of prompts: one each
    assert (tmp_path / "run" / "results.json").is_file()
