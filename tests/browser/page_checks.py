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


LIGHT, DARK = "JupyterLab Light", "JupyterLab Dark"


def set_theme(page, name: str) -> None:
    """Switches JupyterLab's theme and waits until the page shows it.

    The theme is a saved setting: a test that goes dark switches back after.
    """
    page.evaluate(
        "(name) => window.jupyterapp.commands.execute('apputils:change-theme', { theme: name })", name
    )
    page.wait_for_function("(name) => document.body.dataset.jpThemeName === name", arg=name, timeout=30_000)
    # The theme's stylesheet loads after the attribute changes: wait until
    # JupyterLab's own colour variables read as the theme's.
    light = "true" if name == LIGHT else "false"
    page.wait_for_function(
        "(light) => document.body.dataset.jpThemeLight === light", arg=light, timeout=30_000
    )
    page.wait_for_function(
        """(light) => {
            const bg = getComputedStyle(document.body).getPropertyValue('--jp-layout-color1').trim();
            const c = document.createElement('canvas').getContext('2d');
            c.fillStyle = bg; c.fillRect(0, 0, 1, 1);
            const [r, g, b] = c.getImageData(0, 0, 1, 1).data;
            return (r + g + b > 384) === (light === 'true');
        }""",
        arg=light,
        timeout=30_000,
    )
    # JupyterLab covers the page with its splash while it swaps themes.
    page.wait_for_function("() => !document.getElementById('jupyterlab-splash')", timeout=30_000)


# WCAG 2 contrast of every visible text of the element: colours are read as
# the page paints them (a 1-pixel canvas resolves any CSS colour syntax),
# backgrounds composited up the ancestors onto the page's own.
_CONTRAST_JS = """
(root) => {
  const paint = document.createElement('canvas').getContext('2d', { willReadFrequently: true });
  const rgba = (css) => {
    paint.clearRect(0, 0, 1, 1);
    paint.fillStyle = '#000'; paint.fillStyle = css; paint.fillRect(0, 0, 1, 1);
    const [r, g, b, a] = paint.getImageData(0, 0, 1, 1).data;
    return [r, g, b, a / 255];
  };
  const over = (top, under) => top.slice(0, 3).map((c, i) => c * top[3] + under[i] * (1 - top[3])).concat(1);
  const backdrop = (el) => {
    const layers = [];
    for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
      const bg = rgba(getComputedStyle(node).backgroundColor);
      if (bg[3] > 0) layers.push(bg);
      if (bg[3] === 1) break;
    }
    let colour = [255, 255, 255, 1];
    if (!layers.length || layers[layers.length - 1][3] < 1) {
      const page = rgba(getComputedStyle(document.body).backgroundColor);
      if (page[3] === 1) colour = page;
    }
    for (const layer of layers.reverse()) colour = over(layer, colour);
    return colour;
  };
  const luminance = ([r, g, b]) => {
    const lin = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  };
  const failures = [];
  let checked = 0;
  for (const el of [root, ...root.querySelectorAll('*')]) {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    // Fields that show their value as text (a checkbox's value "on" shows nothing).
    const typed = ['text', 'number', 'search', 'email', 'url', 'tel'].includes(el.type);
    const field = (el.tagName === 'INPUT' && typed && el.value) || el.tagName === 'SELECT';
    if (!own && !field) continue;
    if (!el.getClientRects().length || getComputedStyle(el).visibility === 'hidden') continue;
    const bg = backdrop(el);
    const fg = over(rgba(getComputedStyle(el).color), bg);
    const [hi, lo] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
    const ratio = (hi + 0.05) / (lo + 0.05);
    checked += 1;
    if (ratio < 4.5) failures.push(`${ratio.toFixed(2)}: "${(el.value || el.textContent).trim().slice(0, 40)}" <${el.tagName.toLowerCase()} class="${el.className}">`);
  }
  return { checked, failures };
}
"""


def low_contrast_text(page, selector: str) -> list[str]:
    """Texts in the element below WCAG AA's 4.5:1 contrast, each with its ratio.

    Fails when the element shows no text at all: a check of nothing passes
    nothing.
    """
    result = page.eval_on_selector(selector, _CONTRAST_JS)
    assert result["checked"] > 0, f"no visible text in {selector}"
    return result["failures"]


# C0/C1 controls, line separators and bidi controls, as the views escape them (js/names.js).
_RAW_CONTROLS_JS = r"""
(root) => {
  const raw = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
  const found = [];
  for (const el of [root, ...root.querySelectorAll('*')]) {
    for (const n of el.childNodes) if (n.nodeType === 3 && raw.test(n.textContent)) found.push(n.textContent);
    for (const a of el.attributes) if (raw.test(a.value)) found.push(`${a.name}=${a.value}`);
  }
  return found;
}
"""


def no_raw_controls(locator) -> bool:
    """Whether no text or attribute in the element holds a raw control character.

    A newline or tab is left alone: text laid out by the view may hold them.
    """
    found = locator.evaluate(_RAW_CONTROLS_JS)
    assert not found, found
    return True
