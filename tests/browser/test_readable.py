"""Issue 31: what a newcomer could not read, checked on every exported page in Chromium at the width
of JupyterLab's notebook panel (fit.LAB_PANEL_PX) and 900 px high:

  * tables: no cell cut ("..."), no word broken over two lines but after a hyphen or a comma, no
    point in time split over lines (fit.table_problems)
  * pictures: sequence lanes wrapped at spaces or after hyphens only, clients named by client.id
    (not 127.0.0.1:42454), times from the run's start (not epoch milliseconds) (fit.picture_problems)
  * players: a speed choice, a frame counter that says the caption's frame, the caption and the
    highlighted state on screen together (fit.page_player_problems)
  * 06's kip1289.marker_not_colocated cell draws the marker that resolves nothing
  * the index links every prerequisite and names KIP-932 for the share-group notebooks

A screenshot of each page is kept under tests/browser/artifacts/readable/. The checks can fail:
test_an_unreadable_page_is_reported shows them a page with each defect."""
from __future__ import annotations

import re

import pytest

from . import fit, pages
from .conftest import ARTIFACTS

pytestmark = pytest.mark.xdist_group("browser")     # one worker: one notebook at a time

SHOTS = ARTIFACTS / "readable"


def _open(page, path) -> None:
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    fit.narrow(page)


def _shot(page, name: str, element=None) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    target = SHOTS / f"{pages.safe_name(name)}.png"
    if element is not None:
        element.screenshot(path=str(target))
    else:
        page.screenshot(path=str(target), full_page=True)


@pytest.mark.parametrize("path", pages.NOTEBOOKS, ids=[p.name for p in pages.NOTEBOOKS])
def test_every_table_picture_and_player_can_be_read(site, page, path):
    _open(page, site / f"{path.stem}.html")
    found = fit.table_problems(page) + fit.picture_problems(page) + fit.page_player_problems(page)
    page.evaluate("() => window.scrollTo(0, 0)")
    _shot(page, path.stem)
    assert not found, f"{path.stem}: {len(found)} problem(s):\n" + "\n".join(found[:40])


def _cell_of(page, code: str):
    """The exported cell whose input holds `code`."""
    return page.locator(".jp-Cell", has=page.locator(".jp-InputArea", has_text=code)).first


def test_the_marker_that_resolves_nothing_is_drawn_where_it_happens(site, page):
    from kipviz.draw.record_strip import C_MISSED
    _open(page, site / "06_share_group_eos.html")
    cell = _cell_of(page, 'scenarios.run("kip1289.marker_not_colocated")')
    # its pictures: inline SVG, or an image/svg+xml output (an <img> of the SVG, as JupyterLab shows it)
    drawn = cell.evaluate("""(c, missed) => {
        const svgs = [...c.querySelectorAll('.jp-OutputArea-output svg')];
        for (const img of c.querySelectorAll('.jp-OutputArea-output img[src^="data:image/svg+xml"]')) {
          const src = img.getAttribute('src'), comma = src.indexOf(',');
          const text = src.slice(0, comma).endsWith(';base64') ? new TextDecoder().decode(
            Uint8Array.from(atob(src.slice(comma + 1)), ch => ch.charCodeAt(0))) : decodeURIComponent(src.slice(comma + 1));
          svgs.push(new DOMParser().parseFromString(text, 'image/svg+xml').documentElement);
        }
        return svgs.map(svg => ({text: [...svg.querySelectorAll('text')].map(t => t.textContent).join(' '),
          missed: [...svg.querySelectorAll('rect')].filter(r => r.getAttribute('stroke') === missed &&
                                                             r.getAttribute('stroke-dasharray')).length}));
      }""", C_MISSED)
    _shot(page, "06-marker-not-colocated", cell)
    (frame,) = [d for d in drawn if "and resolved nothing" in d["text"]]     # the frame's caption
    assert "reached broker 1" in frame["text"] and "TX_PENDING" in frame["text"] and frame["missed"] == 4 + 1  # + legend
    assert cell.locator(".kv-player").count() == 1          # and the whole run, frame by frame


def test_the_index_links_every_prerequisite_and_names_kip_932(site, page):
    _open(page, site / "index.html")
    rows = page.eval_on_selector_all("table tbody tr", """rs => rs.map(r => {
        const td = r.querySelectorAll('td');
        return {name: td[0].innerText.trim(), code: [...td[3].querySelectorAll('code')].map(c => c.innerText),
                links: [...td[3].querySelectorAll('a')].map(a => a.getAttribute('href')),
                kips: [...td[4].querySelectorAll('a')].map(a => a.innerText)}; })""")
    _shot(page, "index")
    by = {r["name"]: r for r in rows}
    for r in rows:
        assert len(r["links"]) == len(r["code"]) and all((site / h).exists() for h in r["links"]), r
    assert by["09_live_cluster"]["links"] == ["05_txn_offset_commit_v6.html", "06_share_group_eos.html",
                                              "07_spark_log_analysis.html"]
    assert "KIP-932" in by["06_share_group_eos"]["kips"] and "KIP-932" in by["09_live_cluster"]["kips"]


BAD = """<!doctype html><meta charset="utf-8"><body style="margin:0">
<div class="jp-OutputArea-output">
  <table><tr><td>a sentence pandas cut at fifty characters, as it does...</td>
  <td style="width:60px;overflow-wrap:anywhere">ILLEGAL_GENERATION</td>
  <td style="width:60px">2026-01-01 00:00:00</td><td style="width:40px">enricher-consumer</td></tr></table>
</div>
<svg width="400" height="120">
  <g class="kv-head kv-client"><title>enricher-consumer</title><text x="10" y="20">enricher-con</text>
    <text x="10" y="34">sumer</text></g>
  <g class="kv-head kv-client"><title>reader-uncommitted</title><text x="110" y="20">reader-</text>
    <text x="110" y="34">uncommitted</text></g>
  <g class="kv-head kv-client"><title>127.0.0.1:42454</title><text x="210" y="20">127.0.0.1:4245-</text>
    <text x="210" y="34">4</text></g>
  <text x="10" y="80">1/6 · t=1796174194823 ms · transaction tx-1: Empty → Ongoing</text>
</svg>
<div class="kv-player"><div class="kv-controls"><button data-act="first">|&lt;</button>
  <button data-act="next">&gt;</button><span class="kv-count">1 / 2</span></div>
  <div class="kv-caption">1/2 · t=0 ms</div><div class="kv-stage"></div>
  <script type="application/json" class="kv-data">{"pictures": ["<svg xmlns='http://www.w3.org/2000/svg'><text>owner 127.0.0.1:</text></svg>"],
    "frames": [{"p": 0, "caption": "1/2 · t=0 ms"}, {"p": 0, "caption": "2/2 · t=5 ms"}]}</script>
</div></body>"""


def test_an_unreadable_page_is_reported(page, tmp_path):
    f = tmp_path / "bad.html"
    f.write_text(BAD, encoding="utf-8")
    _open(page, f)
    tables, pictures, players = fit.table_problems(page), fit.picture_problems(page), fit.page_player_problems(page)
    _shot(page, "deliberately-unreadable")
    assert any("table cell cut" in p and "fifty characters" in p for p in tables), tables
    assert any(re.search(r"word broken in a table cell: \"ILLEGA\w*\|\w+", p) for p in tables), tables
    assert any("point in time split" in p for p in tables), tables
    assert not [p for p in tables if "enricher" in p], tables               # broken after its hyphen: fine
    assert any('lane "enricher-consumer" broken mid-word' in p for p in pictures), pictures
    assert not [p for p in pictures if "reader-uncommitted" in p], pictures
    assert any("client lane named by its address" in p for p in pictures), pictures
    assert any("epoch milliseconds (1796174194823)" in p for p in pictures), pictures
    assert any("(127.0.0.1:)" in p for p in pictures), pictures            # the strip's lock owner
    assert any("no speed choice" in p for p in players), players
    assert len(tables) == 3 and len(players) == 1, (tables, players)
