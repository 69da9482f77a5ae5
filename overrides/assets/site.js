// Math (KaTeX) and diagrams (Mermaid), both served by this site: no third-party requests.
(function () {
  "use strict";
  var here = document.currentScript && document.currentScript.src;
  var vendor = new URL("vendor/", here || document.baseURI).href;

  // KaTeX is fetched only by pages that have math (about 300 KB with its CSS).
  var katexLoaded = null;
  function loadKatex() {
    if (katexLoaded) return katexLoaded;
    function script(src) {
      return new Promise(function (ok, fail) {
        var s = document.createElement("script");
        s.src = src; s.onload = ok; s.onerror = fail;
        document.head.appendChild(s);
      });
    }
    var css = document.createElement("link");
    css.rel = "stylesheet"; css.href = vendor + "katex/katex.min.css";
    document.head.appendChild(css);
    katexLoaded = script(vendor + "katex/katex.min.js").then(function () {
      return script(vendor + "katex/auto-render.min.js");
    });
    return katexLoaded;
  }

  function renderIn(elements, delimiters) {
    if (!elements.length) return;
    loadKatex().then(function () {
      elements.forEach(function (el) {
        renderMathInElement(el, { delimiters: delimiters, throwOnError: false });
      });
      document.body.setAttribute("data-math", "rendered");
    }).catch(function (e) { console.error("katex:", e); });
  }

  function renderMath() {
    // pymdownx.arithmatex (generic mode) wraps math in .arithmatex with \( \) and \[ \]
    renderIn(Array.prototype.slice.call(document.querySelectorAll(".arithmatex")), [
      { left: "\\(", right: "\\)", display: false },
      { left: "\\[", right: "\\]", display: true },
    ]);
  }

  var mermaidModule = null;
  var drawn = null;      // the palette the diagrams were last drawn in
  var round = 0;         // a palette switch during a redraw starts a new round; the old one stops
  function scheme() {
    return document.body.getAttribute("data-md-color-scheme") === "slate" ? "dark" : "default";
  }
  function renderDiagrams() {
    var nodes = Array.prototype.slice.call(document.querySelectorAll(".mermaid-diagram"));
    if (!nodes.length || scheme() === drawn) return;
    drawn = scheme();
    var mine = ++round;
    nodes.forEach(function (n) {
      if (!n.dataset.source) n.dataset.source = n.textContent;
    });
    document.body.setAttribute("data-diagrams", "rendering");
    (mermaidModule || (mermaidModule = import(vendor + "mermaid/mermaid.esm.min.mjs")))
      .then(function (m) {
        var mermaid = m.default;
        // "strict": labels are text, not HTML; a `click X href "url"` line still makes its box a link
        mermaid.initialize({ startOnLoad: false, theme: drawn, securityLevel: "strict",
                             fontFamily: getComputedStyle(document.body).fontFamily,
                             // a long group title wraps onto two or three lines: leave it room
                             // instead of drawing the group's first boxes over it
                             flowchart: { subGraphTitleMargin: { top: 4, bottom: 30 } } });
        // Each diagram is drawn off the page, then swapped in whole: a redraw (palette switch) never
        // empties the box, so the page neither shows the source nor changes height (no jump).
        return nodes.reduce(function (done, n, i) {
          return done.then(function () {
            if (mine !== round) return;
            return mermaid.render("mermaid-" + mine + "-" + i, n.dataset.source.trim()).then(function (r) {
              if (mine !== round) return;
              n.innerHTML = r.svg;
              if (r.bindFunctions) r.bindFunctions(n);
              n.setAttribute("data-processed", "true");
              fitDiagram(n);
              zoomButton(n);
              scrollCue(n);
            }, function (e) { console.error("mermaid:", e); });
          });
        }, Promise.resolve());
      })
      .then(function () { if (mine === round) document.body.setAttribute("data-diagrams", "rendered"); })
      .catch(function (e) { console.error("mermaid:", e); });
  }

  // Mermaid scales a diagram down to the column: a wide one ends with 5 px text. Keep at least
  // MIN_SCALE of its natural size (Mermaid draws 16 px labels: 0.72 keeps them at 11.5 px) and let
  // the box scroll sideways instead.
  var MIN_SCALE = 0.72;
  function natural(svg) {
    return svg && svg.viewBox && svg.viewBox.baseVal ? svg.viewBox.baseVal.width : 0;
  }
  function fitDiagram(n) {
    var svg = n.querySelector("svg");
    var width = natural(svg), room = n.clientWidth;
    if (!width || !room) return;
    width = Math.min(width, Math.max(room, width * MIN_SCALE));
    svg.style.maxWidth = "none";
    svg.style.width = width + "px";
    svg.setAttribute("width", width);
  }

  // A diagram or plot wider than its box scrolls sideways; data-more says on which side there is more
  // to see, and site.css fades that edge so the reader can tell the box scrolls.
  function scrollCue(el) {
    var max = el.scrollWidth - el.clientWidth;
    if (max <= 1) { el.removeAttribute("data-more"); return; }
    var left = el.scrollLeft > 1, right = el.scrollLeft < max - 1;
    el.setAttribute("data-more", left && right ? "both" : left ? "left" : "right");
    if (!el.dataset.cueBound) {
      el.dataset.cueBound = "1";
      el.addEventListener("scroll", function () { scrollCue(el); }, { passive: true });
    }
  }
  function scrollCues() {
    document.querySelectorAll(".mermaid-diagram[data-processed], .plot-scroll").forEach(scrollCue);
  }
  window.addEventListener("resize", scrollCues);

  // A diagram shown smaller than its natural size, or cut off at the column's edge, gets a button
  // under it that opens it at full size in an overlay (a modal <dialog>: Esc or "Close" ends it and
  // focus returns to the button).
  var zh = (document.documentElement.lang || "").indexOf("zh") === 0;
  var TEXT = zh
    ? { open: "查看大图", close: "关闭", dialog: "原始尺寸的图表" }
    : { open: "View full size", close: "Close", dialog: "Diagram at full size" };
  function zoomButton(n) {
    var svg = n.querySelector("svg");
    var tools = n.nextElementSibling;
    if (!tools || !tools.classList.contains("diagram-tools")) {
      tools = document.createElement("div");
      tools.className = "diagram-tools";
      var b = document.createElement("button");
      b.type = "button";
      b.className = "diagram-zoom";
      b.textContent = TEXT.open;
      b.setAttribute("aria-haspopup", "dialog");
      b.addEventListener("click", function () { openFull(n, b); });
      tools.appendChild(b);
      n.insertAdjacentElement("afterend", tools);
    }
    var shown = svg ? svg.getBoundingClientRect().width : 0;
    tools.hidden = !(natural(svg) > shown + 1 || n.scrollWidth > n.clientWidth + 1);
  }

  var dialog = null;
  function openFull(n, opener) {
    var svg = n.querySelector("svg");
    if (!svg) return;
    if (!dialog) {
      dialog = document.createElement("dialog");
      dialog.className = "diagram-dialog";
      dialog.setAttribute("aria-label", TEXT.dialog);
      var bar = document.createElement("div");
      bar.className = "diagram-dialog__bar";
      var close = document.createElement("button");
      close.type = "button";
      close.className = "diagram-dialog__close";
      close.textContent = TEXT.close;
      close.addEventListener("click", function () { dialog.close(); });
      bar.appendChild(close);
      var body = document.createElement("div");
      body.className = "diagram-dialog__body";
      body.tabIndex = 0;  // arrow keys scroll a diagram larger than the screen
      dialog.appendChild(bar);
      dialog.appendChild(body);
      dialog.addEventListener("click", function (e) { if (e.target === dialog) dialog.close(); });
      dialog.addEventListener("close", function () {
        body.textContent = "";
        if (dialog.returnTo) dialog.returnTo.focus();
      });
      document.body.appendChild(dialog);
    }
    var copy = svg.cloneNode(true);   // keeps its id: Mermaid's styles are scoped to it
    var width = natural(svg);
    copy.style.width = width + "px";
    copy.style.maxWidth = "none";
    copy.setAttribute("width", width);
    dialog.returnTo = opener;
    dialog.querySelector(".diagram-dialog__body").appendChild(copy);
    dialog.showModal();
    dialog.querySelector(".diagram-dialog__close").focus();
  }

  // The language menu links to the other language's copy of the page; both copies share their heading
  // ids (tests/test_parity.py), so the link also takes the reader to the section being read: the anchor
  // in the address bar if its target is on screen, else the last heading scrolled past.
  function sectionInView() {
    var target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (target) {
      var r = target.getBoundingClientRect();
      if (r.bottom > 0 && r.top < window.innerHeight) return target.id;
    }
    var header = document.querySelector(".md-header");
    var line = (header ? header.getBoundingClientRect().bottom : 0) + 8;
    var id = "";
    var heads = document.querySelectorAll(".md-content article h2[id], .md-content article h3[id], .md-content article h4[id]");
    for (var i = 0; i < heads.length; i++) {
      if (heads[i].getBoundingClientRect().top > line) break;
      id = heads[i].id;
    }
    return id;
  }
  function keepSection(e) {
    var a = e.target && e.target.closest ? e.target.closest("a.md-select__link[hreflang]") : null;
    if (!a) return;
    var url = new URL(a.getAttribute("href"), location.href);
    var id = sectionInView();
    url.hash = id ? "#" + encodeURIComponent(id) : "";
    a.href = url.href;
  }
  ["click", "auxclick", "contextmenu"].forEach(function (type) {
    document.addEventListener(type, keepSection, true);
  });

  function ready(fn) {
    if (document.readyState !== "loading") fn();
    else document.addEventListener("DOMContentLoaded", fn);
  }
  ready(function () {
    renderMath();
    renderDiagrams();
    scrollCues();
    // Re-draw diagrams in the new palette when the reader toggles light/dark.
    new MutationObserver(renderDiagrams).observe(document.body, {
      attributes: true, attributeFilter: ["data-md-color-scheme"],
    });
  });
})();
