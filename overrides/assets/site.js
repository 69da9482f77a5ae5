// Math (KaTeX) and diagrams (Mermaid), both served by this site: no third-party requests.
(function () {
  "use strict";
  var here = document.currentScript && document.currentScript.src;
  var vendor = new URL("vendor/", here || document.baseURI).href;

  function renderMath() {
    if (typeof renderMathInElement !== "function") return;
    document.querySelectorAll(".arithmatex").forEach(function (el) {
      renderMathInElement(el, {
        delimiters: [
          { left: "\\(", right: "\\)", display: false },
          { left: "\\[", right: "\\]", display: true },
        ],
        throwOnError: false,
      });
    });
  }

  // Notebook pages (mkdocs-jupyter): math sits in rendered Markdown cells as $...$.
  function renderNotebookMath() {
    if (typeof renderMathInElement !== "function") return;
    document.querySelectorAll(".jupyter-wrapper .jp-RenderedMarkdown").forEach(function (el) {
      renderMathInElement(el, {
        delimiters: [
          { left: "$$", right: "$$", display: true },
          { left: "$", right: "$", display: false },
          { left: "\\(", right: "\\)", display: false },
          { left: "\\[", right: "\\]", display: true },
        ],
        throwOnError: false,
      });
    });
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
                             fontFamily: getComputedStyle(document.body).fontFamily });
        return mermaid.run({ nodes: nodes });
      })
      .then(function () { document.body.setAttribute("data-diagrams", "rendered"); })
      .catch(function (e) { console.error("mermaid:", e); });
  }

  function ready(fn) {
    if (document.readyState !== "loading") fn();
    else document.addEventListener("DOMContentLoaded", fn);
  }
  ready(function () {
    renderMath();
    renderNotebookMath();
    renderDiagrams();
    // Re-draw diagrams in the new palette when the reader toggles light/dark.
    new MutationObserver(renderDiagrams).observe(document.body, {
      attributes: true, attributeFilter: ["data-md-color-scheme"],
    });
  });
})();
