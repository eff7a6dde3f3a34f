"""Realistic runs for the report tests: `hakari.evaluate` on the demo tasks plus a
hostile task, three models with different behaviour (fake backends), every decoding.

The hostile pieces go through every field the page shows: model names, task text (so
prompts), model output (so raw outputs and, through the fallback, extracted answers),
labels (so golds), and, by rewriting the results.json the way a foreign or old file could
be, task names, template ids and the source file name.
"""

from __future__ import annotations

import json
from pathlib import Path

from hakari.backends.base import GenerationRequest, LoglikRequest
from hakari.backends.fake import FakeBackend, hash_choice
from hakari.runner import evaluate

INJECT = "</table><script>window.__pwned=1</script> | \"dq\" 'sq' 日本語テキスト <b>bold</b>"
HOSTILE_MODEL = '<script>window.__pwned=2</script>|"m"\''
JP_MODEL = "モデル</td>乙"
MODELS = ["oracle-7b", HOSTILE_MODEL, JP_MODEL]
HOSTILE_TEMPLATE = '9-9<img src=x onerror="window.__pwned=3">'
HOSTILE_TASK = "evil</h2><script>window.__pwned=4</script>"

_HOSTILE_YAML = """
name: hostile_labels
language: ja
description: "labels and texts with markup {inject}"
target: label
answer_type: label
labels: ["<i>yes</i>", "no|'\\"x\\""]
fallback: {{kind: label, value: "no|'\\"x\\""}}
metrics: [accuracy, mcc]
max_new_tokens: 8
templates:
  - id: 0-0
    prompt: "文: {{text}}\\nA: yes B: no\\n答え："
    regex: "[AB]"
    answers: {{A: "<i>yes</i>", B: "no|'\\"x\\""}}
  - id: 0-1
    prompt: "Text <{{text}}>\\n1 = yes, 2 = no\\nAnswer:"
    regex: "[12]"
    answers: {{"1": "<i>yes</i>", "2": "no|'\\"x\\""}}
  - id: 1-0
    prompt: "{{text}}\\nReply yes or no:"
    regex: "(yes|no)"
    answers: {{"yes": "<i>yes</i>", "no": "no|'\\"x\\""}}
data:
  instances:
"""


def hostile_task(folder: Path) -> Path:
    no = 'no|\'"x"'
    rows = [
        f"    - {{text: {json.dumps(f'{INJECT} #{i}', ensure_ascii=False)}, "
        f"label: {json.dumps('<i>yes</i>' if i % 3 else no)}}}"
        for i in range(12)
    ]
    path = folder / "hostile_labels.yaml"
    path.write_text(
        _HOSTILE_YAML.format(inject=INJECT.replace('"', "'")) + "\n".join(rows) + "\n",
        encoding="utf-8",
    )
    return path


def _responder(model: str):
    def respond(req: GenerationRequest) -> str:
        text = req.prompt
        if model == "oracle-7b":
            # right on most prompts: the label word appears in the prompt's options
            return hash_choice(text, ["0", "A", "1", "yes", "positive", "B", "0", "A"])
        if model == HOSTILE_MODEL:
            return INJECT if not req.regex else hash_choice(text, ["1", "B", "no", "2"])
        return hash_choice(text + "ja", ["0", "A", "1", "B", "はい", INJECT, "2", "yes"])

    return respond


def _loglik(model: str):
    def score(req: LoglikRequest, continuation: str) -> float:
        return -float(int(hash_choice(req.prompt + continuation + model, "0123456789")))

    return score


def make_run(folder: Path, *, limit: int | None = None, n_boot: int = 100) -> Path:
    """A run folder (results.json + samples.jsonl): 3 models × 3 tasks × 3 decodings."""
    task = hostile_task(folder)
    run = folder / "run"
    backends = {m: FakeBackend(_responder(m), name=m, loglik_scorer=_loglik(m)) for m in MODELS}
    evaluate(
        models=MODELS,
        tasks=["demo_sentiment_en", "demo_sentiment_ja", str(task)],
        decodings=["greedy", "constrained", "loglik"],
        limit=limit,
        output_dir=run,
        use_cache=False,
        n_boot=n_boot,
        backend_factory=lambda spec: backends[spec],
    )
    return run


def make_hostile_copy(run: Path, folder: Path) -> Path:
    """The run with a hostile task name and template id, in a folder whose name is hostile:
    what an edited or foreign results.json could hold."""
    target = folder / 'run <b>&"x"</b> 日本'
    target.mkdir(parents=True)
    data = json.loads((run / "results.json").read_text(encoding="utf-8"))
    for model in data["models"].values():
        tasks = model["tasks"]
        tasks[HOSTILE_TASK] = tasks.pop("hostile_labels")
        for dec in tasks[HOSTILE_TASK]["decodings"].values():
            if "0-1" in dec["templates"]:
                dec["templates"][HOSTILE_TEMPLATE] = dec["templates"].pop("0-1")
    if "paired" in data:
        data["paired"][HOSTILE_TASK] = data["paired"].pop("hostile_labels")
    (target / "results.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    with (
        (run / "samples.jsonl").open(encoding="utf-8") as src,
        (target / "samples.jsonl").open("w", encoding="utf-8") as dst,
    ):
        for line in src:
            rec = json.loads(line)
            if rec["task"] == "hostile_labels":
                rec["task"] = HOSTILE_TASK
                if rec["template_id"] == "0-1":
                    rec["template_id"] = HOSTILE_TEMPLATE
            dst.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return target


def add_paired(run: Path, n_boot: int = 50) -> None:
    """Write `paired[TASK][DECODING]` into the run's results.json the way the aggregate
    stage computes it (`aggregate.paired_bootstrap` on the run's own samples)."""
    from collections import defaultdict

    from hakari.aggregate.paired import paired_bootstrap

    preds: dict[tuple[str, str], dict[str, dict[str, dict[int, object]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(dict))
    )
    golds: dict[str, dict[int, object]] = defaultdict(dict)
    for line in (run / "samples.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        key = (rec["task"], rec["decoding"])
        preds[key][rec["model"]][rec["template_id"]][rec["index"]] = rec["answer"]
        golds[rec["task"]][rec["index"]] = rec["gold"]
    data = json.loads((run / "results.json").read_text(encoding="utf-8"))
    paired: dict[str, dict[str, list[dict[str, object]]]] = {}
    for (task, decoding), per_model in preds.items():
        order = sorted(golds[task])
        references = [golds[task][i] for i in order]
        predictions = {
            m: {t: [p[i] for i in order] for t, p in per_template.items()}
            for m, per_template in per_model.items()
        }
        metrics = data["models"][MODELS[0]]["tasks"][task]["metrics"]
        paired.setdefault(task, {})[decoding] = [
            c.to_dict()
            for metric in metrics
            for c in paired_bootstrap(predictions, references, metric, n_boot=n_boot)
        ]
    data["paired"] = paired
    (run / "results.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def make_meta(folder: Path, n_boot: int = 100) -> Path:
    """A `hakari meta --json` document made by `meta.api.meta_evaluate` itself: four
    systems (one with a hostile name) × five tasks × six rows, a human score and three
    metrics of decreasing agreement with it."""
    import numpy as np

    from hakari.meta.api import MetaInput, meta_evaluate
    from hakari.meta.correlation import BootstrapSettings

    rng = np.random.default_rng(0)
    systems = ["base", "ift", HOSTILE_MODEL, JP_MODEL]
    rows = [(s, f"task{g}") for s in systems for g in range(5) for _ in range(6)]
    quality = {s: i / 3 for i, s in enumerate(systems)}
    human = [quality[s] + rng.normal(0, 0.3) for s, _ in rows]
    metrics = {
        "judge": [h + rng.normal(0, 0.2) for h in human],
        "bertscore": [h + rng.normal(0, 0.5) for h in human],
        "rouge<script>": [float(rng.normal(0, 1)) for _ in human],
    }
    data = MetaInput(
        path=folder / "scored.jsonl",
        human_field="human",
        human=human,
        metrics=metrics,
        systems=[s for s, _ in rows],
        groups=[g for _, g in rows],
    )
    document = meta_evaluate(
        data, BootstrapSettings(n_boot=n_boot), tfa_before="base", tfa_after="ift"
    )
    path = folder / "meta.json"
    path.write_text(json.dumps(document, ensure_ascii=False, default=str), encoding="utf-8")
    return path


PARROT, HONEST = "parrot-1b", "honest-1b"
# answer formats of demo_sentiment_en's templates: (what says positive, what says negative)
_FORMATS = {"Options: 0": ("0", "1"), "0 means": ("0", "1"), "Options: A": ("A", "B"),
            "A means": ("A", "B"), "one word": ("positive", "negative"),
            "yes or no": ("yes", "no")}  # fmt: skip


def _share(text: str, salt: str) -> float:
    """A number in [0, 1) fixed by the text (a fake model's coin)."""
    return int(hash_choice(text + salt, [str(i) for i in range(1000)])) / 1000


def _tied_responder(model: str, unparsed: float, right: float, labels: dict[str, str]):
    def respond(req: GenerationRequest) -> str:
        if _share(req.prompt, model + "u") < unparsed:
            return "Hmm, hard to say."  # no template's regex reads this: the fallback
        positive, negative = next(v for k, v in _FORMATS.items() if k in req.prompt)
        gold = next(label for text, label in labels.items() if text in req.prompt)
        correct = _share(req.prompt, model + "r") < right
        return positive if (gold == "positive") == correct else negative

    return respond


def tied_pair_run(folder: Path) -> Path:
    """Two models on demo_sentiment_en (greedy, 1000 replicates) whose Sharpe scores do
    not differ (accuracy: 0.511 against 0.499, p = 0.88): parrot-1b leads on the point
    estimate with 80% of its answers unparsed (scored as the fallback, a label right half
    the time), honest-1b answers every prompt. The run folder."""
    import yaml

    from hakari.tasks.loader import builtin_task_paths

    path = builtin_task_paths()["demo_sentiment_en"]
    task = yaml.safe_load(path.read_text(encoding="utf-8"))
    labels = {row["text"]: row["label"] for row in task["data"]["instances"]}
    settings = {PARROT: (0.84, 0.6), HONEST: (0.0, 0.55)}
    backends = {m: FakeBackend(_tied_responder(m, *s, labels), name=m) for m, s in settings.items()}
    run = folder / "tied"
    evaluate(
        models=list(settings),
        tasks=["demo_sentiment_en"],
        decodings=["greedy"],
        output_dir=run,
        use_cache=False,
        n_boot=1000,
        backend_factory=lambda spec: backends[spec],
    )
    return run
