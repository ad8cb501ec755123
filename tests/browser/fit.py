"""Do a page's pictures fit? Measured in the browser, on the rendered SVG.

JupyterLab at 1280 px with the file browser open leaves the notebook panel about LAB_PANEL_PX
wide; `narrow(page)` shows an exported page (nbconvert's lab template: the same prompts and output
areas) at that width, then `problems(page)` lists, per SVG picture:

  * wider than its output area (cut at the right, or only seen by scrolling sideways)
  * a text element outside its SVG's box (clipped: "UNKNOWN_TOPIC_I")
  * a text element wider than the box it sits in (a rect, polygon, ellipse or filled path drawn in
    the same group that holds the point the text is anchored at: a note spilling out of its box)
  * text drawn smaller than MIN_TEXT_PX after the picture is scaled to fit
  * text drawn over other text: two different <text> elements of one SVG whose boxes overlap by
    more than OVERLAP_PX in both directions (graphviz's self-loop labels, one over the other).
    Not counted: a copy of the same text at the same place (a halo or shadow under the text), empty
    or hidden text, and the lines of one label -- graphviz writes each line of a multi-line label
    as its own <text>, in one group, at one x: lines set 1 em apart (graphviz's HTML labels at
    9 pt) overlap their line boxes by ~0.17 em without their letters touching
  * a line through text: a stroked line, path or arrowhead passing inside the box of one of a
    text's letters (measured on a canvas in the same font; less LINE_INSET_PX), where it is
    painted: not under a filled shape drawn later (a note's box) and not under the text's own
    halo (a white stroke painted first, paint-order="stroke") -- a message label over a lifeline
    it crosses. Lines in <defs>/<pattern>/<marker> and a graphviz node's own outline
    are not counted (the outline is the text's box, checked above)

Each problem is one line naming the picture (its index and first text) and the element."""
from __future__ import annotations

LAB_PANEL_PX = 958            # an exported page's output area is this less 110 px: 848 px, JupyterLab 4.6's
                              # at 1280 px with the file browser open (measured; both side bars' tabs)
MIN_TEXT_PX = 8.0
OVERLAP_PX = 2.0            # line boxes of adjacent lines touch; more than this is text over text
LINE_INSET_PX = 0.5         # a line may touch a letter's box; inside it by more is a line through it

# An SVG shown as <img src="data:image/svg+xml..."> (how JupyterLab and nbconvert show an
# image/svg+xml output) is measured as an inline copy laid over the image at its displayed size.
_INLINE_IMAGES = """() => {
  const made = [];
  for (const img of document.querySelectorAll('img[src^="data:image/svg+xml"]')) {
    const r = img.getBoundingClientRect();
    if (r.width === 0) continue;
    const src = img.getAttribute('src');
    const comma = src.indexOf(',');
    const text = src.slice(0, comma).endsWith(';base64') ? new TextDecoder().decode(
      Uint8Array.from(atob(src.slice(comma + 1)), c => c.charCodeAt(0))) : decodeURIComponent(src.slice(comma + 1));
    const svg = new DOMParser().parseFromString(text, 'image/svg+xml').documentElement;
    if (svg.tagName !== 'svg') continue;
    if (!svg.getAttribute('viewBox')) {
      const w = parseFloat(svg.getAttribute('width')), h = parseFloat(svg.getAttribute('height'));
      if (w && h) svg.setAttribute('viewBox', `0 0 ${w} ${h}`);
    }
    const holder = document.createElement('div');
    holder.className = 'kv-fit-copy';
    holder.style.cssText = `position:absolute;left:${r.left + scrollX}px;top:${r.top + scrollY}px;` +
                           `width:${r.width}px;height:${r.height}px;visibility:hidden;pointer-events:none`;
    svg.setAttribute('width', r.width); svg.setAttribute('height', r.height);
    svg.dataset.fitImage = '1';
    holder.appendChild(document.importNode(svg, true));
    document.body.appendChild(holder);
    holder.dataset.imgRight = r.right;
    made.push(holder);
    img.dataset.fitCopy = made.length;
  }
  return made.length;
}"""

_PROBLEMS = """([minText, slack, overlap, inset]) => {
  const out = [];
  const svgs = [...document.querySelectorAll('svg')].filter(s => !s.parentElement.closest('svg'));
  const vw = document.documentElement.clientWidth;
  const imgs = [...document.querySelectorAll('img[data-fit-copy]')];
  svgs.forEach((svg, i) => {
    const r = svg.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) return;            // hidden (a folded solution, a player's other frame)
    const texts = [...svg.querySelectorAll('text')];
    const name = `svg #${i} (${(texts[0] && texts[0].textContent.trim().slice(0, 40)) || 'no text'})`;
    const copy = svg.parentElement.classList.contains('kv-fit-copy');
    let box = copy ? imgs[[...document.querySelectorAll('.kv-fit-copy')].indexOf(svg.parentElement)].parentElement
                   : svg.parentElement;
    while (box && box !== document.body && getComputedStyle(box).display.startsWith('inline')) box = box.parentElement;
    const c = box.getBoundingClientRect();
    if (r.right > Math.min(c.right, vw) + slack)
      out.push(`${name}: ${Math.round(r.width)} px wide, its output area ${Math.round(Math.min(c.right, vw) - r.left)} px: cut at the right`);
    for (const t of texts) {
      const b = t.getBoundingClientRect();
      if (!t.textContent.trim()) continue;
      const label = JSON.stringify(t.textContent.trim().slice(0, 40));
      if (b.left < r.left - slack || b.right > r.right + slack || b.top < r.top - slack || b.bottom > r.bottom + slack)
        out.push(`${name}: text ${label} outside the picture (clipped)`);
      const m = t.getScreenCTM();                            // its scale, whatever its rotation
      const size = parseFloat(getComputedStyle(t).fontSize) * (m ? Math.hypot(m.a, m.b) : 1);
      if (size < minText) out.push(`${name}: text ${label} drawn at ${size.toFixed(1)} px (< ${minText})`);
      const g = t.parentElement;
      const shapes = [...g.children].filter(e => ['rect', 'polygon', 'ellipse', 'path'].includes(e.tagName) &&
                                              !e.closest('defs'));
      const anchor = getComputedStyle(t).textAnchor;        // the point the text is drawn from
      const cx = anchor === 'middle' ? (b.left + b.right) / 2 : anchor === 'end' ? b.right - 2 : b.left + 2;
      const cy = (b.top + b.bottom) / 2;
      for (const s of shapes) {
        const sb = s.getBoundingClientRect();
        if (sb.width < 2 || sb.height < 2) continue;
        if (s.tagName === 'path' && s.getAttribute('fill') in {none: 1, '': 1}) continue;
        if (!(cx > sb.left && cx < sb.right && cy > sb.top && cy < sb.bottom)) continue;
        if (sb.width >= r.width - 2 && sb.height >= r.height - 2) continue;     // the picture's background
        if (b.left < sb.left - slack || b.right > sb.right + slack)
          out.push(`${name}: text ${label} (${Math.round(b.width)} px) overflows its ${s.tagName} (${Math.round(sb.width)} px)`);
        break;
      }
    }
    const px = t => { const m = t.getScreenCTM(); return parseFloat(getComputedStyle(t).fontSize) * (m ? Math.hypot(m.a, m.b) : 1); };
    // text over text: sweep the boxes left to right, compare each with those it can still reach
    const boxes = texts.map(t => ({t, b: t.getBoundingClientRect(), s: t.textContent.trim()}))
      .filter(o => o.s && o.b.width > 0 && o.b.height > 0 && getComputedStyle(o.t).visibility !== 'hidden')
      .sort((p, q) => p.b.left - q.b.left);
    for (let a = 0; a < boxes.length; a++) {
      const A = boxes[a];
      for (let k = a + 1; k < boxes.length && boxes[k].b.left < A.b.right - overlap; k++) {
        const B = boxes[k];
        const ox = Math.min(A.b.right, B.b.right) - Math.max(A.b.left, B.b.left);
        const oy = Math.min(A.b.bottom, B.b.bottom) - Math.max(A.b.top, B.b.top);
        if (ox <= overlap || oy <= overlap) continue;
        if (A.s === B.s && Math.abs(A.b.left - B.b.left) < 1 && Math.abs(A.b.top - B.b.top) < 1) continue;  // a halo
        if (A.t.parentElement === B.t.parentElement && A.t.getAttribute('x') === B.t.getAttribute('x') &&
            getComputedStyle(A.t).textAnchor === getComputedStyle(B.t).textAnchor &&
            Math.abs(A.b.top - B.b.top) >= 0.9 * Math.min(px(A.t), px(B.t))) continue;          // lines of one label
        const at = `${Math.round(Math.max(A.b.left, B.b.left) - r.left)},${Math.round(Math.max(A.b.top, B.b.top) - r.top)}`;
        out.push(`${name}: text ${JSON.stringify(A.s.slice(0, 40))} drawn over text ${JSON.stringify(B.s.slice(0, 40))}` +
                 ` (${Math.round(ox)}x${Math.round(oy)} px at ${at})`);
      }
    }
    // a line through text: points along each stroked line or arrowhead that fall inside a text's box
    // (less `inset` px each side) and are painted: not under a filled shape or a halo painted later
    const later = (a, b) => Boolean(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);
    const unpainted = e => e.closest('defs, pattern, marker, clipPath, mask, symbol');
    const fills = [...svg.querySelectorAll('rect, polygon, ellipse, path, circle')].filter(o => {
      const cs = getComputedStyle(o);
      return !unpainted(o) && cs.fill !== 'none' && cs.fillOpacity !== '0' && cs.visibility !== 'hidden';
    }).map(o => ({el: o, b: o.getBoundingClientRect()}));
    const haloed = t => { const cs = getComputedStyle(t);
      return cs.stroke !== 'none' && parseFloat(cs.strokeWidth) >= 2 && cs.paintOrder.startsWith('stroke'); };
    // each letter's own box (the canvas measures the ink of the same letters in the same font), not
    // the text's line box, whose corners and descender band are mostly empty: graphviz sets an edge
    // label beside its edge, touching them
    const cv = document.createElement('canvas').getContext('2d');
    const BASE = {auto: 'alphabetic', alphabetic: 'alphabetic', middle: 'middle', central: 'middle', hanging: 'hanging',
                  'text-before-edge': 'top', 'text-after-edge': 'bottom', ideographic: 'ideographic'};
    const letters = B => {
      const t = B.t, cs = getComputedStyle(t), m = t.getScreenCTM(), s = t.textContent;
      const x = parseFloat(t.getAttribute('x')), y = parseFloat(t.getAttribute('y'));
      const base = BASE[cs.dominantBaseline];
      if (!m || isNaN(x) || isNaN(y) || !base || t.querySelector('tspan') || /[ ,]/.test(t.getAttribute('x').trim()))
        return [{left: B.b.left, right: B.b.right, top: B.b.top, bottom: B.b.bottom}];    // its line box
      cv.font = `${cs.fontStyle} ${cs.fontWeight} ${px(t)}px ${cs.fontFamily}`;
      cv.textAlign = 'left';
      cv.textBaseline = base;
      const full = cv.measureText(s).width, sx = m.a * x + m.c * y + m.e, sy = m.b * x + m.d * y + m.f;
      const x0 = sx - (cs.textAnchor === 'middle' ? full / 2 : cs.textAnchor === 'end' ? full : 0);
      const out = [];
      for (let i = 0; i < s.length; i++) {
        if (!s[i].trim()) continue;
        const at = x0 + cv.measureText(s.slice(0, i)).width, g = cv.measureText(s[i]);
        out.push({left: at - g.actualBoundingBoxLeft, right: at + g.actualBoundingBoxRight,
                  top: sy - g.actualBoundingBoxAscent, bottom: sy + g.actualBoundingBoxDescent});
      }
      return out;
    };
    const crossed = new Set();
    const strokes = [...svg.querySelectorAll('path, line, polyline, polygon')].filter(e => {
      const cs = getComputedStyle(e);
      return !unpainted(e) && cs.stroke !== 'none' && cs.visibility !== 'hidden' && !e.closest('g.node');
    });                                                   // a graphviz node's outline is its box: checked above
    for (const e of strokes) {
      const eb = e.getBoundingClientRect();
      const near = boxes.filter(B => !crossed.has(B) && B.b.right > eb.left && B.b.left < eb.right &&
                                     B.b.bottom > eb.top && B.b.top < eb.bottom);
      if (!near.length || !e.getTotalLength) continue;
      const m = e.getScreenCTM(), L = e.getTotalLength(), step = Math.max(1, L / 4000);
      const pts = [];
      for (let d = 0; d <= L; d += step) { const q = e.getPointAtLength(d); pts.push([m.a * q.x + m.c * q.y + m.e, m.b * q.x + m.d * q.y + m.f]); }
      for (const B of near) {
        const ks = B.letters || (B.letters = letters(B));
        const hit = pts.find(([x, y]) => ks.some(k => x > k.left + inset && x < k.right - inset && y > k.top + inset &&
                                                      y < k.bottom - inset) && !(later(e, B.t) && haloed(B.t)) &&
                                          !fills.some(f => f.el !== e && later(e, f.el) && x >= f.b.left && x <= f.b.right &&
                                                           y >= f.b.top && y <= f.b.bottom));
        if (!hit) continue;
        crossed.add(B);
        out.push(`${name}: text ${JSON.stringify(B.s.slice(0, 40))} crossed by a ${e.tagName}` +
                 ` at ${Math.round(hit[0] - r.left)},${Math.round(hit[1] - r.top)}`);
      }
    }
  });
  return out;
}"""


def narrow(page) -> None:
    """The page at the width of JupyterLab's notebook panel at 1280 px with the file browser open."""
    page.set_viewport_size({"width": LAB_PANEL_PX, "height": 900})


def problems(page, *, min_text: float = MIN_TEXT_PX, slack: float = 1.5, overlap: float = OVERLAP_PX,
             inset: float = LINE_INSET_PX) -> list[str]:
    page.evaluate("() => document.querySelectorAll('.kv-fit-copy').forEach(e => e.remove())")
    page.evaluate(_INLINE_IMAGES)
    try:
        return page.evaluate(_PROBLEMS, [min_text, slack, overlap, inset])
    finally:
        page.evaluate("() => document.querySelectorAll('.kv-fit-copy').forEach(e => e.remove())")


# ---- can the page be read? (issue 31) -----------------------------------------------------------------
# Tables: a cell cut with "..." (pandas' max_colwidth) or "…"; a word broken over two lines anywhere but
# after a hyphen or a comma ("partitio|ns"); a point in time split over lines. A run of dots after dots is
# no cut, and a hex dump's rows are bytes, not words (its ASCII column: "pviz...orders...").
_TABLES = r"""() => {
  const out = [];
  const cells = [...document.querySelectorAll('.jp-OutputArea-output table td, .jp-OutputArea-output table th')]
    .filter(td => !td.closest('.kvx'));               // a hex dump (kipviz.draw.hexdump): bytes, not words
  const lines = (node, a, b) => {
    const r = document.createRange(); r.setStart(node, a); r.setEnd(node, b);
    return [...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top));
  };
  cells.forEach(td => {
    const t = td.innerText.trim();
    const where = JSON.stringify(t.slice(0, 50));
    if (/[^.]\.\.\.$|…$/.test(t) || t === '...') out.push(`table cell cut: ${where}`);
    const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
    for (let n; (n = walker.nextNode());) {
      const s = n.textContent, re = /\S+/g;
      for (let m; (m = re.exec(s));) {
        if (new Set(lines(n, m.index, m.index + m[0].length)).size < 2) continue;
        for (let i = 1; i < m[0].length; i++) {            // where the line changes
          const a = lines(n, m.index + i - 1, m.index + i), b = lines(n, m.index + i, m.index + i + 1);
          if (a.length && b.length && b[0] > a[0] + 1) {
            if (!'-,'.includes(m[0][i - 1])) out.push(`word broken in a table cell: ${JSON.stringify(m[0].slice(0, i) + '|' + m[0].slice(i))}`);
            break;
          }
        }
      }
    }
    if (/^\d{4}-\d\d-\d\d[ T]\d\d:\d\d/.test(t) && td.firstChild) {
      const tops = [...td.getClientRects()].length && lines(td.firstChild, 0, (td.firstChild.textContent || '').length);
      if (tops && new Set(tops).size > 1) out.push(`point in time split over lines: ${where}`);
    }
  });
  return out;
}"""

# Pictures: a sequence lane's title (g.kv-head, its full name in <title>) wrapped anywhere but at a
# space or after a hyphen; a client lane, a lock owner or a caption naming a client by its address
# (127.0.0.1:42454) instead of its client.id; a time given as epoch milliseconds (t=1796174194823 ms)
# instead of from the run's start. Players' captions and pictures are read from every frame (the page
# player's data, kv-data), not only the one shown.
_PICTURES = r"""() => {
  const out = [];
  const esc = s => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  for (const g of document.querySelectorAll('g.kv-head')) {
    const title = g.querySelector('title'), name = title ? title.textContent : null;
    const ls = [...g.querySelectorAll('text')].map(t => t.textContent);
    if (name === null) { out.push(`lane ${JSON.stringify(ls.join(' '))} has no <title> naming it`); continue; }
    const pattern = ls.map((l, i) => i === ls.length - 1 ? esc(l) :
                                     l.endsWith('-') ? esc(l.slice(0, -1)) + '-?' : esc(l) + ' ').join('');
    if (!new RegExp('^' + pattern + '$').test(name))
      out.push(`lane ${JSON.stringify(name)} broken mid-word: ${JSON.stringify(ls.join(' | '))}`);
    if (g.classList.contains('kv-client') && /^\[?[0-9a-f.:]+\]?:\d+$/i.test(name) && /\d+\.\d+|::/.test(name))
      out.push(`client lane named by its address, not its client.id: ${JSON.stringify(name)}`);
  }
  const texts = [...document.querySelectorAll('svg text')].map(t => t.textContent);
  document.querySelectorAll('.kv-caption, .kv-anim-caption').forEach(c => texts.push(c.textContent));
  document.querySelectorAll('script.kv-data').forEach(s => {
    const d = JSON.parse(s.textContent);
    d.frames.forEach(f => texts.push(f.caption));
    d.pictures.forEach(p => texts.push(...[...new DOMParser().parseFromString(p, 'image/svg+xml')
                                                .querySelectorAll('text')].map(t => t.textContent)));
  });
  const seen = new Set();
  for (const t of texts) {
    const addr = /\b\d{1,3}(\.\d{1,3}){3}:\d*/.exec(t), epoch = /\b1[6-9]\d{11}\b/.exec(t);
    for (const p of [addr && `a client named by its address (${addr[0]}) in ${JSON.stringify(t.slice(0, 60))}`,
                     epoch && `a time as epoch milliseconds (${epoch[0]}) in ${JSON.stringify(t.slice(0, 60))}`])
      if (p && !seen.has(p)) { seen.add(p); out.push(p); }
  }
  return [...new Set(out)];
}"""


def table_problems(page) -> list[str]:
    """Every table of the page's outputs: no cell cut, no word broken but after a hyphen, no point in
    time split over lines."""
    return sorted(set(page.evaluate(_TABLES)))


def picture_problems(page) -> list[str]:
    """Lanes wrapped at spaces or hyphens only; clients named by client.id; times from the run's start."""
    return page.evaluate(_PICTURES)


# The page's players (kipviz.draw.animate.player_fragment): each has a speed choice, its counter says
# the caption's frame ("6 / 6" with "6/6 · ..."), and with the player's top at the top of a 900 px
# window the caption and the highlighted state (a state-machine node filled as the current one) are
# on screen together.
_PAGE_PLAYERS = r"""async (fill) => {
  const out = [];
  const players = [...document.querySelectorAll('.kv-player')];
  for (const [k, p] of players.entries()) {
    const name = `player #${k} (${(p.querySelector('.kv-caption').textContent || '').slice(0, 40)})`;
    if (!p.querySelector('.kv-controls select')) out.push(`${name}: no speed choice`);
    const data = JSON.parse(p.querySelector('script.kv-data').textContent), n = data.frames.length;
    p.querySelector('[data-act=first]').click();
    for (let i = 0; i < n; i++) {
      if (i) p.querySelector('[data-act=next]').click();
      const count = p.querySelector('.kv-count').textContent.replace(/\s/g, ''), cap = p.querySelector('.kv-caption');
      const m = /^(\d+)\/(\d+)/.exec(cap.textContent);
      if (m && count !== `${m[1]}/${m[2]}`) { out.push(`${name}: counter ${count}, caption ${m[0]}`); break; }
      p.scrollIntoView({block: 'start'});
      await new Promise(r => requestAnimationFrame(r));
      const shown = [...p.querySelectorAll('.kv-stage > div')].find(d => d.style.display !== 'none');
      const node = shown && [...shown.querySelectorAll('g.node')].find(g => g.querySelector(`[fill="${fill}"]`));
      if (!node) continue;
      const c = cap.getBoundingClientRect(), s = node.getBoundingClientRect(), vh = innerHeight;
      const stage = p.querySelector('.kv-stage').getBoundingClientRect();
      if (c.top < 0 || s.bottom > Math.min(vh, stage.bottom) + 1 || s.top < stage.top - 1)
        { out.push(`${name}: frame ${i + 1}: its highlighted state (${Math.round(s.top)}-${Math.round(s.bottom)} px) ` +
                   `is not on screen with its caption (${Math.round(c.top)} px) in a ${vh} px window`); break; }
    }
  }
  return out;
}"""


def page_player_problems(page) -> list[str]:
    from kipviz.draw.machines import C_CURRENT_FILL
    return page.evaluate(_PAGE_PLAYERS, C_CURRENT_FILL)
