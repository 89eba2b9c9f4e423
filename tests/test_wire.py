"""The wire between each widget and its front end: declared once on each side, and the two agree.

A field the kernel sends that the front end's declaration lacks, or the
reverse, fails here; TypeScript then checks each read against the front
end's declaration, and mypy each write against the kernel's.
"""

from __future__ import annotations

import importlib
import pathlib
import pkgutil
import re

import anywidget
import pytest

import jaxcapture_nb.views
from jaxcapture_nb.core import wire
from jaxcapture_nb.views import front_end
from jaxcapture_nb.views.base import FrontEndWidget
from jaxcapture_nb.views.live_view import _update_message
from jaxcapture_nb.views.mode_panel import ModePanel
from jaxcapture_nb.views.patching_view import PatchingView

JS = pathlib.Path(__file__).resolve().parent.parent / "js"


def widget_classes() -> list[type[FrontEndWidget]]:
    """Every widget the package defines: a new one is checked here without being listed."""
    for found in pkgutil.iter_modules(jaxcapture_nb.views.__path__):
        importlib.import_module(f"jaxcapture_nb.views.{found.name}")
    return sorted(FrontEndWidget.__subclasses__(), key=lambda w: w.__name__)


WIDGETS = widget_classes()


def test_every_widget_is_found():
    assert [w.__name__ for w in WIDGETS] == [
        "AttentionView",
        "CaptureView",
        "CompareView",
        "LiveView",
        "LogitLensView",
        "ModePanel",
        "PatchingView",
    ]


def typedef_fields(source: str, name: str) -> dict[str, bool]:
    """The fields of the object ``@typedef {{...}} name`` in ``source``, each with whether it is optional.

    Example:
      >>> typedef_fields("/** @typedef {{a: number, b?: {c: string}[]}} T */", "T")
      {'a': False, 'b': True}
    """
    text = re.sub(r"\n\s*\*", "\n", source)  # JSDoc's leading stars
    for start in (m.end() for m in re.finditer(r"@typedef \{\{", text)):
        depth, k = 1, start
        while depth:
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            k += 1
        if re.match(rf"\}}\s*{name}\b", text[k:]):
            body, fields, depth = text[start : k - 1], {}, 0
            for m in re.finditer(r"[{}()\[\]<>]|(\w+)(\??):", body):
                if m.group(1) is None:
                    depth += 1 if m.group(0) in "{([<" else -1
                elif depth == 0:
                    fields[m.group(1)] = m.group(2) == "?"
            return fields
    raise LookupError(f"no @typedef {{{{...}}}} {name}")


@pytest.mark.parametrize("message", list(wire.FRONT_END_TYPES), ids=lambda m: m.__name__)
def test_each_message_has_the_same_fields_on_both_sides(message):
    file, name = wire.FRONT_END_TYPES[message]
    kernel = {key: key in message.__optional_keys__ for key in message.__annotations__}
    assert typedef_fields((JS / file).read_text(), name) == kernel


def test_a_message_is_what_its_declaration_says():
    assert set(_update_message(0, True, [], [])) == wire.LiveUpdate.__required_keys__


def front_end_traits(widget: type[FrontEndWidget]) -> set[str]:
    """The trait names a widget's front end reads, sets or listens to."""
    source = front_end.module(widget.front_end)
    used = set(re.findall(r'model\.(?:get|set|on|off)\("(?:change:)?(\w+)"', source))
    used |= set(re.findall(r'entries\d*\((?:view, )?"(\w+)"\)', source))  # LiveView's sites and scalars
    for listed in re.findall(r"const STATUS_TRAITS = \[([^\]]*)\]", source):
        used |= set(re.findall(r'"(\w+)"', listed))
    # A comparison's traits are read through a getter that puts the widget's prefix in front.
    prefix = "_compare" if widget is ModePanel else ""
    if "function readComparison(" in source:
        for listed in re.findall(r"const COMPARISON_TRAITS = \[([^\]]*)\]", source):
            used |= {prefix + n for n in re.findall(r'"(\w+)"', listed)}
        used |= {prefix + n for n in re.findall(r'(?<![.\w])get\("(\w+)"\)', source)}
    return used


@pytest.mark.parametrize("widget", WIDGETS, ids=lambda w: w.__name__)
def test_a_widget_syncs_exactly_the_traits_its_front_end_uses(widget):
    synced = set(widget.class_traits(sync=True)) - set(anywidget.AnyWidget.class_traits(sync=True))
    assert synced == front_end_traits(widget)


def test_the_check_sees_a_trait_the_front_end_does_not_use():
    class Extra(PatchingView):
        _unread = PatchingView.class_traits()["_readouts"].__class__().tag(sync=True)

    synced = set(Extra.class_traits(sync=True)) - set(anywidget.AnyWidget.class_traits(sync=True))
    assert synced - front_end_traits(Extra) == {"_unread"}
