"""The transformers engine's host overhead: hakari's `HFBackend` against a plain loop on a
model whose compute is negligible, so that what is timed is the Python around it.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_overhead.py [--questions 64]
        [--demo 96] [--rounds 3] [--smoke] [--against TREE [--tree-rounds 2]]
        [--hidden 64 --layers 2 --heads 4]

The model: the tests' tiny random Llama (tests/helpers/tiny_model.py: by default 2 layers,
4 heads, here hidden 64; `--layers`, `--heads`, `--hidden` shrink it until its compute is
negligible beside the host's work) with the real SmolLM2-135M tokenizer (from the
packaged model's converted folder, as the tests take theirs), fp32, on this CPU. Two
workloads:

* log-likelihood, JMMLU-like `space:16`: `--questions` synthetic Japanese four-choice
  questions × 16 templates (4 instructions × 0-3 shots; half end in a space, which
  lm-eval's rule moves to the continuation), continuations "A" to "D". The plain loop:
  a batch of 32 prompts tokenized in one call, left-padded, one forward pass, the four
  letters read off the last position (what the issue calls one forward per question).
* greedy generation on the demo task (`demo_sentiment_en`, every template, the first
  `--demo` prompts, the run's token caps, stop at a newline after the answer starts).
  The plain loop: batches of 32, left-padded, a greedy step loop on the key/value cache
  that stops a row at a newline token once it has written something, or at EOS or its cap.

Printed: ms per log-likelihood request and passes (forward calls) per request; ms per
generated token per row; the same for the plain loop and the ratio hakari / loop; the
pass cost the backend measured at load. Times are the best of `--rounds` interleaved
rounds (`timing.best_of_rounds`). Answers are compared (the letter chosen; the text up
to the stop) and the share that agree printed. Measure on a quiet machine: numbers from
a loaded one (or `--smoke`) are not measurements.

`--against TREE` compares two trees of hakari instead (before and after a change): TREE
is a checkout of the older one (e.g. `git worktree add /tmp/before 2d5dd8e`). The same
measurement runs in a fresh process for each tree (its `src` first on the path; this
script and the model are the same), the trees alternating `--tree-rounds` times, and
each keeps its fastest workload times; printed: each workload's seconds in both and the
ratio, passes, and whether the answers are identical (the chosen letter of every
log-likelihood request, the text of every greedy answer).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
from timing import REPO, add_smoke_flag, best_of_rounds, need_module
from transformers import AutoTokenizer, LlamaForCausalLM

sys.path.insert(0, str(REPO))  # tests.helpers.tiny_model: the tests' tiny model, one definition

from tests.helpers.tiny_model import tiny_llama

from hakari.backends.base import GenerationRequest, LoglikRequest, stop_index
from hakari.backends.cache import default_cache_dir
from hakari.backends.hf import HFBackend
from hakari.backends.packaged import SMOLLM2, converted_model
from hakari.tasks.data import iter_rows
from hakari.tasks.loader import load_task
from hakari.tasks.prompts import iter_chunks

BATCH = 32
# the cache's keyword and output field (transformers 5 renamed `past_key_values`)
CACHE = (
    "cache"
    if "cache" in inspect.signature(LlamaForCausalLM.forward).parameters
    else "past_key_values"
)
LETTERS = ("A", "B", "C", "D")
INSTRUCTIONS = (
    "以下は{subject}に関する多肢選択式の質問です。正しい答えを一つ選んでください。",
    "次の質問に A、B、C、D のいずれかで答えなさい。",
    "{subject}の問題です。選択肢から最も適切なものを選び、記号で答えてください。",
    "Answer the following multiple-choice question about {subject} with one letter.",
)
SUBJECTS = ("マーケティング", "世界史", "高校数学", "栄養学")


def _question(k: int) -> str:
    subject = SUBJECTS[k % 4]
    body = f"問題{k}: 新しい製品を市場に出すとき、{subject}の観点から最初に考えるべきことはどれか。"
    choices = "\n".join(
        f"{x}. 選択肢{k}-{x}は、説明の文が少し長めに書かれている場合がある。" for x in LETTERS
    )
    return f"{body}\n{choices}"


def loglik_requests(questions: int) -> list[LoglikRequest]:
    """`questions` × 16 templates (4 instructions × 0-3 shots), JMMLU's shape."""
    out = []
    for q in range(questions):
        for t, instruction in enumerate(INSTRUCTIONS):
            for shots in range(4):
                head = instruction.format(subject=SUBJECTS[q % 4])
                examples = "".join(
                    f"{_question(1000 + s)}\n答え: {LETTERS[s % 4]}\n\n" for s in range(shots)
                )
                end = "答え: " if (t + shots) % 2 else "答え:"  # a trailing space moves
                out.append(LoglikRequest(f"{head}\n\n{examples}{_question(q)}\n{end}", LETTERS))
    return out


def demo_requests(limit: int) -> list[GenerationRequest]:
    spec = load_task("demo_sentiment_en").spec
    prompts = [
        rp for chunk in iter_chunks(spec, spec.templates, iter_rows(spec), 100) for rp in chunk
    ]
    return [
        GenerationRequest(prompt=rp.text, max_new_tokens=rp.max_new_tokens, stop=("\n",))
        for rp in prompts[:limit]
    ]


class Passes:
    """Forward calls of the model, counted by a pre-hook."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.n = 0
        model.register_forward_pre_hook(self._count)

    def _count(self, *_: Any) -> None:
        self.n += 1


def _left_pad(rows: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(map(len, rows))
    ids = torch.full((len(rows), width), pad)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, width - len(r) :] = torch.tensor(r)
        mask[i, width - len(r) :] = 1
    return ids, mask


@torch.inference_mode()
def plain_loglik(model: Any, tok: Any, requests: list[LoglikRequest]) -> list[int]:
    """The chosen letter of each request: one forward per batch of prompts."""
    letters = [tok(x, add_special_tokens=False)["input_ids"][-1] for x in LETTERS]
    spaced_letters = [tok(" " + x, add_special_tokens=False)["input_ids"][-1] for x in LETTERS]
    chosen: list[int] = []
    for start in range(0, len(requests), BATCH):
        batch = requests[start : start + BATCH]
        # lm-eval's rule: a trailing space goes with the letter, read as " A"
        texts = [r.prompt.rstrip() for r in batch]
        spaced = [r.prompt != r.prompt.rstrip() for r in batch]
        ids, mask = _left_pad(tok(texts)["input_ids"], tok.pad_token_id)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        logits = model(
            input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=1
        ).logits[:, -1]
        logp = torch.log_softmax(logits.float(), -1)
        for row, space in zip(logp, spaced, strict=True):
            chosen.append(int(row[spaced_letters if space else letters].argmax()))
    return chosen


@torch.inference_mode()
def plain_greedy(
    model: Any, tok: Any, requests: list[GenerationRequest], newline: set[int]
) -> list[list[int]]:
    """Each request's generated tokens: a greedy step loop on the cache, batches of 32;
    `newline`: the tokens whose text holds a newline."""
    eos = tok.eos_token_id
    out: list[list[int]] = []
    for start in range(0, len(requests), BATCH):
        batch = requests[start : start + BATCH]
        ids, mask = _left_pad(tok([r.prompt for r in batch])["input_ids"], tok.pad_token_id)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        made: list[list[int]] = [[] for _ in batch]
        live = [True] * len(batch)
        cache = None
        step_ids = ids
        for _ in range(max(r.max_new_tokens for r in batch)):
            o = model(
                input_ids=step_ids,
                attention_mask=mask,
                position_ids=positions,
                use_cache=True,
                logits_to_keep=1,
                **{CACHE: cache},
            )
            cache = getattr(o, CACHE)
            nxt = o.logits[:, -1].argmax(-1)
            for i, t in enumerate(nxt.tolist()):
                if not live[i]:
                    continue
                made[i].append(t)
                if (
                    t == eos
                    or len(made[i]) >= batch[i].max_new_tokens
                    or (t in newline and tok.decode(made[i]).strip())
                ):
                    live[i] = False
            if not any(live):
                break
            step_ids = nxt[:, None]
            mask = torch.cat([mask, torch.ones(len(batch), 1, dtype=torch.long)], -1)
            positions = positions[:, -1:] + 1
        out.extend(made)
    return out


def _text(tok: Any, tokens: list[int]) -> str:
    text = tok.decode(tokens, skip_special_tokens=True)
    cut = stop_index(text, ["\n"])
    return text if cut is None else text[:cut]


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=64, help="JMMLU-like questions (× 16)")
    parser.add_argument("--demo", type=int, default=96, help="demo-task prompts generated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", type=Path, help="an older checkout to compare with")
    parser.add_argument("--tree-rounds", type=int, default=2, help="processes a tree (--against)")
    parser.add_argument("--hidden", type=int, default=64, help="the tiny model's hidden size")
    parser.add_argument("--layers", type=int, default=2, help="the tiny model's layers")
    parser.add_argument("--heads", type=int, default=4, help="the tiny model's attention heads")
    parser.add_argument("--json", type=Path, help=argparse.SUPPRESS)  # a tree's worker output
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.questions, args.demo, args.rounds, args.tree_rounds = 2, 8, 1, 1
    return args


def main() -> None:
    args = _args()
    need_module(SMOLLM2.package, f"the SmolLM2 tokenizer: {SMOLLM2.pip_install}")
    if args.against is not None:
        compare_trees(args)
        return
    measured = measure(args)
    if args.json is not None:
        args.json.write_text(json.dumps(measured), encoding="utf-8")


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The table against the plain loop; returns hakari's times, passes and answers."""
    folder = converted_model(SMOLLM2, default_cache_dir()).folder
    tok = AutoTokenizer.from_pretrained(Path(folder))
    model = tiny_llama(
        tok, hidden_size=args.hidden, max_positions=2048, layers=args.layers, heads=args.heads
    )
    backend = HFBackend(model, tok, name="tiny-random", revision="", prompt_format="completion")
    passes = Passes(model)
    newline = {i for t, i in tok.get_vocab().items() if "\n" in tok.convert_tokens_to_string([t])}
    ll, gen = loglik_requests(args.questions), demo_requests(args.demo)
    got: dict[str, Any] = {}
    counted: dict[str, int] = {}

    def run(name: str, fn: Any) -> Any:
        def go() -> None:
            passes.n = 0
            got[name] = fn()
            counted[name] = passes.n

        return go

    variants = {
        "hakari loglik": run("hakari loglik", lambda: backend.loglik(ll)),
        "loop loglik": run("loop loglik", lambda: plain_loglik(model, tok, ll)),
        "hakari greedy": run("hakari greedy", lambda: backend.generate(gen)),
        "loop greedy": run("loop greedy", lambda: plain_greedy(model, tok, gen, newline)),
    }
    if args.json is not None:  # a tree's worker (--against): hakari's side alone
        variants = {k: v for k, v in variants.items() if k.startswith("hakari")}
    times = best_of_rounds(variants, args.rounds, alternate=True)
    hakari_letters = [max(range(4), key=lambda i: r.logprobs[i]) for r in got["hakari loglik"]]
    hakari_tokens = sum(r.n_tokens for r in got["hakari greedy"])
    if args.json is None:
        _loop_table(backend, tok, got, times, counted, (ll, gen))
    return {
        "loglik_s": times["hakari loglik"],
        "greedy_s": times["hakari greedy"],
        "loglik_passes": counted["hakari loglik"],
        "greedy_passes": counted["hakari greedy"],
        "greedy_tokens": hakari_tokens,
        "letters": hakari_letters,
        "texts": [r.text for r in got["hakari greedy"]],
    }


def _loop_table(
    backend: HFBackend,
    tok: Any,
    got: dict[str, Any],
    times: dict[str, float],
    counted: dict[str, int],
    workloads: tuple[list[LoglikRequest], list[GenerationRequest]],
) -> None:
    ll, gen = workloads
    hakari_letters = [max(range(4), key=lambda i: r.logprobs[i]) for r in got["hakari loglik"]]
    hakari_tokens = sum(r.n_tokens for r in got["hakari greedy"])
    same_ll = sum(a == b for a, b in zip(hakari_letters, got["loop loglik"], strict=True))
    loop_tokens = sum(len(t) for t in got["loop greedy"])
    same_gen = sum(
        r.text == _text(tok, t)
        for r, t in zip(got["hakari greedy"], got["loop greedy"], strict=True)
    )
    serving = getattr(backend, "serving_record", None)  # absent before the pass cost
    print(f"pass cost measured at load: {serving() if serving else 'not measured (older tree)'}")
    print(
        f"log-likelihood: {len(ll)} requests (JMMLU-like space:16); greedy: {len(gen)} demo prompts"
    )
    print("| | hakari | plain loop | hakari / loop |")
    print("|---|---|---|---|")
    rows = [
        (
            "log-likelihood, ms a request",
            times["hakari loglik"] / len(ll),
            times["loop loglik"] / len(ll),
        ),
        (
            "log-likelihood, passes a request",
            counted["hakari loglik"] / len(ll),
            counted["loop loglik"] / len(ll),
        ),
        (
            "greedy, ms a generated token a row",
            times["hakari greedy"] / max(hakari_tokens, 1),
            times["loop greedy"] / max(loop_tokens, 1),
        ),
        (
            "greedy, passes a request",
            counted["hakari greedy"] / len(gen),
            counted["loop greedy"] / len(gen),
        ),
    ]
    for label, ours, theirs in rows:
        scale = 1000 if label.split(", ")[1].startswith("ms") else 1
        print(f"| {label} | {ours * scale:.3f} | {theirs * scale:.3f} | {ours / theirs:.2f}x |")
    print(f"answers the same: log-likelihood {same_ll}/{len(ll)}, greedy {same_gen}/{len(gen)}")
    print(
        f"tokens generated: hakari {hakari_tokens}, loop {loop_tokens}; "
        f"median cap {statistics.median(r.max_new_tokens for r in gen)}"
    )


def _tree_run(tree: Path, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """One measurement in a fresh process with `tree`'s hakari first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree / "src"), str(Path(__file__).parent)])
    command = [sys.executable, __file__, "--questions", str(args.questions)]
    command += ["--demo", str(args.demo), "--rounds", str(args.rounds), "--json", str(out)]
    command += ["--hidden", str(args.hidden), "--layers", str(args.layers)]
    command += ["--heads", str(args.heads)]
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return dict(json.loads(out.read_text(encoding="utf-8")))


def compare_trees(args: argparse.Namespace) -> None:
    """`--against`: each tree measured in `--tree-rounds` alternating processes."""
    here = Path(__file__).resolve().parents[1]
    trees = {"before": args.against.resolve(), "this tree": here}
    best: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(args.tree_rounds):
            order = list(trees) if r % 2 == 0 else list(trees)[::-1]
            for name in order:
                got = _tree_run(trees[name], args, Path(scratch) / f"{name}-{r}.json")
                kept = best.setdefault(name, got)
                for key in ("loglik_s", "greedy_s"):
                    kept[key] = min(kept[key], got[key])
    before, after = best["before"], best["this tree"]
    n_ll, n_gen = len(before["letters"]), len(before["texts"])
    print(f"before: {trees['before']}; this tree: {here}")
    print(f"{n_ll} JMMLU-like space:16 log-likelihood requests, {n_gen} greedy demo prompts")
    print("| | before | this tree | this tree / before |")
    print("|---|---|---|---|")
    rows = [
        ("log-likelihood, s for all requests", before["loglik_s"], after["loglik_s"]),
        ("log-likelihood, passes", before["loglik_passes"], after["loglik_passes"]),
        ("greedy, s for all prompts", before["greedy_s"], after["greedy_s"]),
        ("greedy, passes", before["greedy_passes"], after["greedy_passes"]),
        ("greedy, tokens generated", before["greedy_tokens"], after["greedy_tokens"]),
    ]
    for label, old, new in rows:
        print(f"| {label} | {old:.3f} | {new:.3f} | {new / old:.2f}x |".replace(".000 |", " |"))
    same_ll = sum(a == b for a, b in zip(before["letters"], after["letters"], strict=True))
    same_gen = sum(a == b for a, b in zip(before["texts"], after["texts"], strict=True))
    print(f"answers identical: log-likelihood {same_ll}/{n_ll}, greedy {same_gen}/{n_gen}")


if __name__ == "__main__":
    main()
