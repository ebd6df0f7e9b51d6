"""A tiny DOM from the stdlib HTML parser, for asserting the structure of the HTML report."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)


@dataclass
class Node:
    tag: str
    attrs: dict[str, str] = field(default_factory=dict)
    children: list[Node | str] = field(default_factory=list)

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.walk()

    def find_all(self, tag: str | None = None, **attrs: str) -> list[Node]:
        """Descendants (and self) with ``tag`` whose attributes contain ``attrs``.

        ``class_`` matches one class among several; other keys match exactly
        (``data_row`` is the ``data-row`` attribute).
        """
        found = []
        for node in self.walk():
            if tag is not None and node.tag != tag:
                continue
            ok = True
            for key, want in attrs.items():
                name = key.rstrip("_").replace("_", "-")
                have = node.attrs.get(name)
                if name == "class":
                    ok = ok and have is not None and want in have.split()
                else:
                    ok = ok and have == want
            if ok:
                found.append(node)
        return found

    def find(self, tag: str | None = None, **attrs: str) -> Node:
        found = self.find_all(tag, **attrs)
        assert found, f"no <{tag}> with {attrs}"
        return found[0]

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document")
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return
        raise AssertionError(f"stray </{tag}>")

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(markup: str) -> Node:
    """The document tree; asserts every element was closed."""
    builder = _Builder()
    builder.feed(markup)
    builder.close()
    assert len(builder.stack) == 1, f"unclosed: {[n.tag for n in builder.stack[1:]]}"
    return builder.root
