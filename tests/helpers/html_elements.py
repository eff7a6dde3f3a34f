"""What the report tests read from an HTML page or an inline SVG: the elements, their
attributes and the text, as the standard library's HTMLParser reads the markup (a tag or
an `on*` attribute made from a name is the failure these tests look for, so the parse a
browser would make beyond that is not needed)."""

from __future__ import annotations

from html.parser import HTMLParser


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse_html(html: str) -> Elements:
    parser = Elements()
    parser.feed(html)
    return parser
