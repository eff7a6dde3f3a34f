"""The one redaction filter (issue 17 §2): credentials from URLs, query strings, bearer
tokens and the key variables leave nothing hakari prints or writes; a placeholder key
(`-`, `EMPTY`) redacts nothing, so the recorded command still says what was run."""

from __future__ import annotations

import io

import pytest

from hakari._util.redact import (
    MIN_KEY_LENGTH,
    RedactingStream,
    redact,
    redact_keys,
    redact_tree,
)

KEY = "sk-live-0123456789abcdef"


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HAKARI_API_KEY", "OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HAKARI_API_KEY", KEY)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # URL credentials
        ("openai:m@http://alice:hunter2pass@host/v1", "openai:m@http://***@host/v1"),
        ("hf:https://me:pa55@host/x", "hf:https://***@host/x"),
        ("https://token@host/", "https://***@host/"),
        # query strings
        ("http://h/v1?api_key=s3cr3t: 404", "http://h/v1?api_key=***: 404"),
        ("http://h/v1?x=1&token=abc#frag", "http://h/v1?x=1&token=***#frag"),
        ("http://h/v1?key=abc&model=m", "http://h/v1?key=***&model=m"),
        ("http://h/v1?API-KEY=abc", "http://h/v1?API-KEY=***"),
        ("http://h/v1?access_token=abc;sig=xyz", "http://h/v1?access_token=***;sig=***"),
        # bearer tokens
        ("Authorization: Bearer tok123", "Authorization: Bearer ***"),
        ('{"authorization": "bearer sk-abc"}', '{"authorization": "bearer ***"}'),
        # the configured key, wherever it is
        (f"--key={KEY}", "--key=***"),
        (f"invalid key {KEY}.", "invalid key ***."),
    ],
)
def test_credentials_are_redacted(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "openai:m@http://localhost:8000/v1",  # a model spec's @ is no userinfo
        "openai:a@http://h1/v1,openai:b@http://h2/v1",
        "http://h/v1?monkey=1&keyboard=2",  # not secret parameters
        "the bearer of the ring",
        "hakari run --model fake:A --limit 4 --decoding greedy,constrained",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize("placeholder", ["-", "EMPTY", "none", "x" * (MIN_KEY_LENGTH - 1)])
def test_a_placeholder_key_redacts_nothing(monkeypatch: pytest.MonkeyPatch, placeholder) -> None:
    """HAKARI_API_KEY=- used to star every '-' of the recorded command."""
    monkeypatch.setenv("HAKARI_API_KEY", placeholder)
    argv = f"hakari run --model openai:m@http://h/v1 --limit 4 -o {placeholder}-out"
    assert redact(argv) == argv
    assert redact_keys(argv) == (argv, 0)


def test_every_key_variable_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other-0123456789")
    monkeypatch.setenv("HF_TOKEN", "hf_abcdefghijklmnop")
    text = f"Bearer {KEY} / sk-other-0123456789 / hf_abcdefghijklmnop / {KEY}"
    assert redact_keys(text) == ("Bearer *** / *** / *** / ***", 4)


def test_model_output_keeps_everything_but_the_keys() -> None:
    """Output is measured data: only the configured keys' text is replaced, and counted."""
    output = f"curl -H 'Authorization: Bearer abc123' http://u:p@h/?token=t  # {KEY}"
    redacted, count = redact_keys(output)
    assert count == 1 and redacted == output.replace(KEY, "***")


def test_a_key_inside_a_longer_key_is_redacted_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY[:-4])  # a prefix of the other key
    assert redact_keys(f"x{KEY}x") == ("x***x", 1)


def test_tree_redacts_keys_and_values() -> None:
    data = {"models": {"openai:m@http://h/v1?api_key=abc": {"n": 1}}, "argv": [f"k={KEY}"]}
    assert redact_tree(data) == {
        "models": {"openai:m@http://h/v1?api_key=***": {"n": 1}},
        "argv": ["k=***"],
    }


def test_stream_writes_through_the_filter() -> None:
    inner = io.StringIO()
    stream = RedactingStream(inner)
    assert stream.write(f"error: http://a:b@h/ {KEY}\n") == len(f"error: http://a:b@h/ {KEY}\n")
    assert inner.getvalue() == "error: http://***@h/ ***\n"
    assert stream.getvalue() == inner.getvalue()  # everything else is the inner stream's


def test_a_piece_of_a_key_is_a_secret_too() -> None:
    """A reflected key cut by the answer's character budget leaves its prefix."""
    assert redact_keys(f"Bearer {KEY[:12]}") == ("Bearer ***", 1)
    assert redact_keys(f"{KEY[5:20]} and {KEY}") == ("*** and ***", 2)
    short = KEY[: MIN_KEY_LENGTH - 1]
    assert redact_keys(f"Bearer {short}") == (f"Bearer {short}", 0)
