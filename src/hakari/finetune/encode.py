"""Examples → token ids with the loss on the answer only.

The prompt is rendered and tokenised exactly as the evaluation does it
(`hakari.backends.hf`): with `chat`, the user turn through the tokenizer's chat template
with the generation prompt, tokenised without extra special tokens; with `completion`,
the raw prompt with the tokenizer's special tokens (e.g. Gemma's <bos>). The answer is
what follows that prompt: with `chat`, the rest of the conversation the template renders
with the assistant turn (the target and the end-of-turn token); with `completion`, the
target and EOS. Prompt positions get label -100, so only the answer is learned — the
model is trained on exactly the token sequence it will be asked to continue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hakari.errors import HakariInputError
from hakari.finetune.data import Example

IGNORE_INDEX = -100  # the label torch's cross-entropy skips


@dataclass(frozen=True)
class Encoded:
    input_ids: list[int]
    labels: list[int]

    def as_features(self) -> dict[str, list[int]]:
        return {
            "input_ids": self.input_ids,
            "attention_mask": [1] * len(self.input_ids),
            "labels": self.labels,
        }


class ExampleEncoder:
    def __init__(self, tokenizer: Any, prompt_format: str, max_length: int) -> None:
        supports_chat = bool(getattr(tokenizer, "chat_template", None))
        if prompt_format == "chat" and not supports_chat:
            raise HakariInputError(
                "the model has no chat template; use completion or auto",
                field="--prompt-format",
            )
        if tokenizer.eos_token_id is None:
            raise HakariInputError("the model's tokenizer has no EOS token", field="--model")
        self.tokenizer = tokenizer
        self.use_chat = supports_chat and prompt_format != "completion"
        self.max_length = max_length

    @property
    def prompt_format(self) -> str:
        return "chat" if self.use_chat else "completion"

    def prompt_text(self, prompt: str) -> str:
        if not self.use_chat:
            return prompt
        chat = [{"role": "user", "content": prompt}]
        return str(
            self.tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        )

    def answer_ids(self, example: Example, rendered_prompt: str) -> list[int]:
        if self.use_chat:
            chat = [
                {"role": "user", "content": example.prompt},
                {"role": "assistant", "content": example.target},
            ]
            full = str(self.tokenizer.apply_chat_template(chat, tokenize=False))
            if full.startswith(rendered_prompt):
                return self._ids(full[len(rendered_prompt) :], special=False)
        # completion format, or a chat template whose assistant turn does not extend the
        # generation prompt (e.g. one that rewrites earlier turns): target + EOS
        return [*self._ids(example.target, special=False), int(self.tokenizer.eos_token_id)]

    def encode(self, example: Example) -> Encoded:
        rendered = self.prompt_text(example.prompt)
        prompt_ids = self._ids(rendered, special=not self.use_chat)
        answer = self.answer_ids(example, rendered)
        return Encoded(
            input_ids=prompt_ids + answer, labels=[IGNORE_INDEX] * len(prompt_ids) + answer
        )

    def encode_all(self, examples: Sequence[Example]) -> tuple[list[Encoded], int]:
        """The encoded examples that fit `max_length`, and how many were dropped."""
        kept = []
        for ex in examples:
            enc = self.encode(ex)
            if len(enc.input_ids) <= self.max_length:
                kept.append(enc)
        return kept, len(examples) - len(kept)

    def _ids(self, text: str, *, special: bool) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=special)["input_ids"])
