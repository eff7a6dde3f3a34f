"""The HTML report in a real browser: Debian's headless Chromium driven by playwright.

Checks what only a browser can: the page runs no script and logs no error, every section
renders, every injected string is text in the DOM (no element made from it), the CSS-only
filters hide and show the right samples, and a screenshot of each section is saved
(`$HAKARI_SCREENSHOT_DIR`, else the test's tmp folder). Skips where Chromium or
playwright is absent (`scripts/install-browser.sh` installs Chromium and the CJK fonts).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hakari.reports.inputs import load_inputs
from hakari.reports.page import build_html
from tests.helpers.report_fixtures import (
    HOSTILE_MODEL,
    HOSTILE_TASK,
    HOSTILE_TEMPLATE,
    INJECT,
    JP_MODEL,
    add_paired,
    make_hostile_copy,
    make_meta,
    make_run,
)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH (bash scripts/install-browser.sh)"
)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, list[str], Path]]:
    folder = tmp_path_factory.mktemp("browser")
    run = make_run(folder, limit=6, n_boot=40)
    add_paired(run, n_boot=40)
    hostile = make_hostile_copy(run, folder)
    html_path = folder / "report.html"
    meta = make_meta(folder, n_boot=50)
    html = build_html(load_inputs([hostile, meta]), samples_per_template=3)
    html_path.write_text(html, "utf-8")
    shots = Path(os.environ.get("HAKARI_SCREENSHOT_DIR") or folder / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        context = browser.new_context(viewport={"width": 1280, "height": 900}, offline=True)
        pg = context.new_page()
        messages: list[str] = []
        pg.on("console", lambda m: messages.append(f"{m.type}: {m.text}"))
        pg.on("pageerror", lambda e: messages.append(f"pageerror: {e}"))
        pg.on("request", lambda r: None if r.url.startswith("file:") else messages.append(r.url))
        pg.goto(html_path.as_uri())
        yield pg, messages, shots
        browser.close()


@pytest.mark.slow
def test_renders_without_errors_or_scripts(page: tuple[Any, list[str], Path]) -> None:
    pg, messages, _ = page
    assert messages == []  # no console message, no page error, no request leaving the file
    assert pg.evaluate("window.__pwned") is None
    counts = pg.evaluate(
        "['script','img','iframe','object','embed','i','link'].map("
        "t => document.getElementsByTagName(t).length)"
    )
    assert counts == [0] * 7
    assert pg.evaluate("[...document.querySelectorAll('*')].flatMap(e => [...e.attributes])"
                       ".filter(a => a.name.startsWith('on')).length") == 0  # fmt: skip


@pytest.mark.slow
def test_every_section_is_present_and_screenshotted(page: tuple[Any, list[str], Path]) -> None:
    pg, _, shots = page
    for selector, expected in [
        ("#runs", 1),
        ("#overview table.overview", 3),  # one per decoding
        ("section.task", 3),
        ("section.decoding", 9),
        ("table.leaderboard", 18),
        ("table.heatmap", 18),
        ("table.paired", 18),
        ("figure.bump svg", 9),
        ("figure.templates svg", 9),  # one per task × decoding
        ("details.samples", 3),
        ("#meta h4", 5),  # system, summary, pooled levels; CAT/CIT; TFA
        ("#meta figure.matrix svg", 2),  # pooled and system metric × metric heatmaps
    ]:
        assert pg.locator(selector).count() == expected, selector
    pg.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    for name, selector in [
        ("header", "header.top"),
        ("runs", "#runs"),
        ("overview", "#overview"),
        ("decoding", "section.decoding >> nth=0"),
        ("leaderboard", "table.leaderboard >> nth=0"),
        ("heatmap", "table.heatmap >> nth=0"),
        ("bump-chart", "figure.bump >> nth=0"),
        ("template-chart", "figure.templates >> nth=1"),
        ("template-chart-japanese", "figure.templates >> nth=4"),
        ("paired", "table.paired >> nth=0"),
        ("samples", "details.samples >> nth=2"),
        ("meta", "#meta"),
    ]:
        path = shots / f"report-{name}.png"
        pg.locator(selector).screenshot(path=str(path))
        assert path.stat().st_size > 1000


@pytest.mark.slow
def test_injected_strings_are_text_in_every_field(page: tuple[Any, list[str], Path]) -> None:
    pg, _, _ = page
    pg.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    texts = {
        "model names (tables)": pg.eval_on_selector_all(
            "table.leaderboard .model", "es => es.map(e => e.textContent)"
        ),
        "prompts": pg.eval_on_selector_all("pre.prompt", "es => es.map(e => e.textContent)"),
        "raw outputs": pg.eval_on_selector_all("pre.out", "es => es.map(e => e.textContent)"),
        "golds": pg.eval_on_selector_all("code.gold", "es => es.map(e => e.textContent)"),
        "answers": pg.eval_on_selector_all(
            "table.answers td code", "es => es.map(e => e.textContent)"
        ),
        "task names": pg.eval_on_selector_all(
            "section.task h2", "es => es.map(e => e.textContent)"
        ),
        "template ids": pg.eval_on_selector_all(
            "table.heatmap thead th", "es => es.map(e => e.textContent)"
        ),
        "chart legends": pg.eval_on_selector_all(
            "figure.bump svg text", "es => es.map(e => e.textContent)"
        ),
        "template chart legends": pg.eval_on_selector_all(
            "figure.templates svg text", "es => es.map(e => e.textContent)"
        ),
        "file names": pg.eval_on_selector_all("section.run h3", "es => es.map(e => e.textContent)"),
        "meta metrics": pg.eval_on_selector_all(
            "#meta td .model, #meta svg text", "es => es.map(e => e.textContent)"
        ),
    }
    expect = {
        "model names (tables)": [HOSTILE_MODEL, JP_MODEL],
        "prompts": [INJECT],
        "raw outputs": [INJECT],
        "golds": ["<i>yes</i>", 'no|\'"x"'],
        "answers": ["<i>yes</i>"],
        "task names": [HOSTILE_TASK],
        "template ids": [HOSTILE_TEMPLATE],
        "chart legends": [HOSTILE_MODEL, JP_MODEL],
        "template chart legends": [HOSTILE_MODEL, JP_MODEL, HOSTILE_TEMPLATE[:15]],
        "file names": ['run <b>&"x"</b> 日本'],
        "meta metrics": ["rouge<script>"],
    }
    for field, wanted in expect.items():
        for s in wanted:
            assert any(s in t for t in texts[field]), (field, s)


def test_css_filters(page: tuple[Any, list[str], Path]) -> None:
    pg, _, _ = page
    pg.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    box = pg.locator(".samplebox").nth(0)

    def visible(selector: str) -> int:
        return box.locator(selector).evaluate_all(
            "es => es.filter(e => e.offsetParent !== null).length"
        )

    blocks = visible("article.blk")
    assert blocks == 6 * 3  # 6 templates × first 3 instances
    box.locator("label", has_text="incorrect").click()
    assert visible("tr.ok") == 0 and visible("tr.bad") > 0
    box.locator("label", has_text="correct").first.click()
    assert visible("tr.bad") == 0 and visible("tr.ok") > 0
    box.locator("label", has_text="all").first.click()
    box.locator("label", has_text="1-2").click()
    assert visible("article.blk") == 3
    headers = box.locator("article.blk header").evaluate_all(
        "es => es.filter(e => e.offsetParent !== null).map(e => e.textContent)"
    )
    assert all("1-2" in h for h in headers)
