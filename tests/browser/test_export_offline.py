"""`kipviz export` viewed in a real browser with no network and no kernel: the notebooks that show an
animation are exported (run, widget state turned into inline players), then each page is opened
from file:// in Chromium with every http(s) request refused. Nothing may be fetched; every
exercise's outcome is folded (nothing after its fold on screen) until its fold is clicked, as in
JupyterLab before the answer; then every player's Play must advance its frames (caption and picture
change)."""
from __future__ import annotations

import pytest

from . import folds, pages

pytestmark = pytest.mark.xdist_group("browser")     # one worker: one notebook at a time

WITH_PLAYER = [p for p in pages.NOTEBOOKS if "player(" in p.read_text()]     # on the session's site (conftest)


def test_some_notebook_shows_a_player():
    assert WITH_PLAYER


def _offline(page) -> list[str]:
    """Refuse every request that is not file: or data: and return the list they are recorded in."""
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url)
            if not r.url.startswith(("file:", "data:", "about:", "blob:")) else None)
    page.route("**/*", lambda route: route.abort() if route.request.url.startswith(("http:", "https:", "ws:"))
               else route.continue_())
    return fetched


@pytest.mark.parametrize("path", WITH_PLAYER, ids=[p.name for p in WITH_PLAYER])
def test_exported_page_plays_offline(site, page, path):
    fetched = _offline(page)
    page.goto((site / f"{path.stem}.html").as_uri())
    page.wait_for_load_state("load")
    shut = folds.page_folds(page)
    assert shut and all(not f["open"] and not any(f["after"]) for f in shut), shut
    first = page.locator(".jp-Cell:has(details.kv-fold)").first.locator("xpath=preceding-sibling::div[1]")
    pages.screenshot(page, f"export-{path.stem}-folded", first)          # the question's check, then its fold
    for _ in shut:                                                    # the reader opens each fold
        page.locator("details.kv-fold:not([open]) > summary").first.click()
    opened = folds.page_folds(page)
    assert all(f["open"] and all(f["after"]) for f in opened), [f for f in opened if not all(f["after"])][:3]
    pages.screenshot(page, f"export-{path.stem}-opened", first)
    players = page.locator(".kv-player")
    assert players.count() >= 1
    for i in range(players.count()):
        p = players.nth(i)
        count, caption = p.locator(".kv-count"), p.locator(".kv-caption")
        n = int(count.inner_text().split("/")[1])
        assert n >= 2, f"player {i} has {n} frame(s)"
        c0 = caption.inner_text()
        p.locator("[data-act=play]").click()
        p.evaluate("""(el, c0) => new Promise((ok, fail) => {
                        const t0 = Date.now();
                        const tick = () => el.querySelector('.kv-count').textContent.startsWith('1 /') ||
                            el.querySelector('.kv-caption').textContent === c0
                          ? (Date.now() - t0 > 20000 ? fail(new Error('did not advance')) : setTimeout(tick, 100))
                          : ok();
                        tick(); })""", c0)
        assert p.locator(".kv-stage svg").count() >= 1
        p.locator("[data-act=play]").click()                          # pause
        if i == 0:
            pages.screenshot(page, f"export-{path.stem}-player0", p)
    index = site / "index.html"
    page.goto(index.as_uri())
    # the contents link each page (once as a row, again where a later notebook names it as a prerequisite)
    assert page.locator(f'a[href="{path.stem}.html"]').count() >= 1
    assert fetched == [], fetched[:5]
