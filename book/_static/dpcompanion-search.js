/* dpcompanion: search result snippets without raw TeX.
   Sphinx's search shows a page's text near the match, taken from the page's HTML before
   MathJax has run, so formulas appear as raw "\(\sigma_t^2\)". Each snippet (p.context) is
   rewritten as it is added: delimiters dropped, common commands as Unicode. */
(function () {
  "use strict";
  var SYMBOLS = {
    alpha: "α", beta: "β", gamma: "γ", Gamma: "Γ", delta: "δ", Delta: "Δ", epsilon: "ε",
    varepsilon: "ε", zeta: "ζ", eta: "η", theta: "θ", kappa: "κ", lambda: "λ", mu: "μ",
    nu: "ν", xi: "ξ", pi: "π", rho: "ρ", sigma: "σ", Sigma: "Σ", tau: "τ", phi: "φ",
    varphi: "φ", chi: "χ", psi: "ψ", omega: "ω", Omega: "Ω", sum: "Σ", prod: "Π",
    sqrt: "√", le: "≤", leq: "≤", ge: "≥", geq: "≥", neq: "≠", ne: "≠", approx: "≈",
    cdot: "·", times: "×", infty: "∞", to: "→", rightarrow: "→", in: "∈", pm: "±",
    ll: "≪", gg: "≫", propto: "∝", nabla: "∇", partial: "∂", ldots: "…", dots: "…",
    cdots: "⋯", quad: " ", qquad: " ", ",": " ", ";": " ", "!": "", lfloor: "⌊",
    rfloor: "⌋", lceil: "⌈", rceil: "⌉", "{": "{", "}": "}", "|": "‖", "%": "%"
  };
  function plain(tex) {
    var s = tex;
    for (var i = 0; i < 3; i++) {
      s = s.replace(/\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, "($1)/($2)");
    }
    s = s.replace(/\\(?:mathrm|mathbf|mathit|mathcal|mathbb|operatorname|text|textrm|boldsymbol)\s*\{([^{}]*)\}/g, "$1");
    s = s.replace(/\\(?:left|right|big|Big|bigg|Bigg)\b/g, "");
    s = s.replace(/\\([A-Za-z]+|[,;!{}|%])/g, function (m, name) {
      return Object.prototype.hasOwnProperty.call(SYMBOLS, name) ? SYMBOLS[name] : name;
    });
    return s.replace(/[{}]/g, "").replace(/\s+/g, " ");
  }
  function clean(text) {
    return text
      .replace(/\\\(([\s\S]*?)\\\)/g, function (m, t) { return plain(t); })
      .replace(/\\\[([\s\S]*?)\\\]/g, function (m, t) { return plain(t); })
      .replace(/\$\$([\s\S]*?)\$\$/g, function (m, t) { return plain(t); })
      .replace(/\\\(|\\\)|\\\[|\\\]/g, "");  // a formula cut by the snippet's 240 characters
  }
  function fix(node) {
    if (node.nodeType !== 1) return;
    var ps = node.matches && node.matches("p.context") ? [node] : node.querySelectorAll ? node.querySelectorAll("p.context") : [];
    for (var i = 0; i < ps.length; i++) {
      var t = ps[i].textContent, c = clean(t);
      if (c !== t) ps[i].textContent = c;
    }
  }
  window.dpcompanionPlainTeX = clean;  // for the browser test
  // Issue 34: a snippet is the page's text near the match, read from [role=main], which also
  // holds the article's header buttons (Binder, Colab, download): a match near the top showed
  // "...Binder". The buttons, sidebars and footer are dropped before Sphinx reads the text.
  var NOT_TEXT = ".bd-header-article, .article-header-buttons, .header-article-items, .bd-sidebar-primary, " +
                 ".bd-sidebar-secondary, .prev-next-area, .bd-footer-article, .bd-footer-content";
  function withoutButtons(orig) {
    var f = function (htmlString, anchor) {
      var doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll(NOT_TEXT).forEach(function (e) { e.remove(); });
      return orig(doc.documentElement.outerHTML, anchor);
    };
    f.dpcompanion = true;
    return f;
  }
  function patchSnippets() {
    if (typeof Search !== "undefined" && Search.htmlToText && !Search.htmlToText.dpcompanion) {
      Search.htmlToText = withoutButtons(Search.htmlToText);
    }
  }
  window.dpcompanionSnippetText = function (html) { patchSnippets(); return Search.htmlToText(html); };  // for the browser test
  patchSnippets();
  function start() {
    patchSnippets();
    var root = document.getElementById("search-results");
    if (!root) return;
    fix(root);
    new MutationObserver(function (records) {
      records.forEach(function (r) { r.addedNodes.forEach(fix); });
    }).observe(root, { childList: true, subtree: true });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
