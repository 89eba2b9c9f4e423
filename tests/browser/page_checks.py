"""Checks on a page that browser tests share: screenshots and canvas pixels."""

import pathlib

ARTIFACTS = pathlib.Path(__file__).resolve().parents[2] / "test-artifacts"


def screenshot(page, name: str) -> pathlib.Path:
    """Saves a screenshot under test-artifacts/ and returns its path."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path


def blank_canvas(page, selector: str) -> bool:
    """Whether every pixel of the canvas is transparent."""
    return page.eval_on_selector(
        selector,
        "c => !c.getContext('2d').getImageData(0, 0, c.width, c.height).data.some(v => v !== 0)",
    )
