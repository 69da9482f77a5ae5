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
  function scheme() {
    return document.body.getAttribute("data-md-color-scheme") === "slate" ? "dark" : "default";
  }
  function renderDiagrams() {
    var nodes = Array.prototype.slice.call(document.querySelectorAll(".mermaid-diagram"));
    if (!nodes.length) return;
    nodes.forEach(function (n) {
      if (!n.dataset.source) n.dataset.source = n.textContent;
      n.removeAttribute("data-processed");
      n.textContent = n.dataset.source;
    });
    (mermaidModule || (mermaidModule = import(vendor + "mermaid/mermaid.esm.min.mjs")))
      .then(function (m) {
        var mermaid = m.default;
        mermaid.initialize({ startOnLoad: false, theme: scheme(), securityLevel: "strict",
                             fontFamily: getComputedStyle(document.body).fontFamily,
                             // a long group title wraps onto two or three lines: leave it room
                             // instead of drawing the group's first boxes over it
                             flowchart: { subGraphTitleMargin: { top: 4, bottom: 30 } } });
        return mermaid.run({ nodes: nodes });
      })
      .then(function () { nodes.forEach(fitDiagram); document.body.setAttribute("data-diagrams", "rendered"); })
      .catch(function (e) { console.error("mermaid:", e); });
  }

  // Mermaid scales a diagram down to the column: a wide one ends with 5 px text. Keep at least
  // MIN_SCALE of its natural size (Mermaid draws 16 px labels: 0.72 keeps them at 11.5 px) and let
  // the box scroll sideways instead.
  var MIN_SCALE = 0.72;
  function fitDiagram(n) {
    var svg = n.querySelector("svg");
    if (!svg || !svg.viewBox || !svg.viewBox.baseVal) return;
    var natural = svg.viewBox.baseVal.width;
    var room = n.clientWidth;
    if (!natural || !room) return;
    var width = Math.min(natural, Math.max(room, natural * MIN_SCALE));
    svg.style.maxWidth = "none";
    svg.style.width = width + "px";
    svg.setAttribute("width", width);
  }

  function ready(fn) {
    if (document.readyState !== "loading") fn();
    else document.addEventListener("DOMContentLoaded", fn);
  }
  ready(function () {
    renderMath();
    renderDiagrams();
    // Re-draw diagrams in the new palette when the reader toggles light/dark.
    new MutationObserver(renderDiagrams).observe(document.body, {
      attributes: true, attributeFilter: ["data-md-color-scheme"],
    });
  });
})();
