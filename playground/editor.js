// A small code editor: a transparent <textarea> over a highlighted copy of its text, a gutter
// with line numbers and error markers, and wavy underlines under diagnostic spans (hover for
// the message). No framework: the text is re-highlighted on each input, which is instant at
// the size of a kernel file.
"use strict";

const SarekEditor = (function () {
  const KEYWORDS = new Set(
    ("let rec in if then else for to downto do done while match with fun function type of and " +
      "mutable mut begin end open not mod land lor lxor lnot lsl lsr asr").split(" ")
  );
  const TYPES = new Set("int32 int64 float32 float64 bool unit vector array int float".split(" "));
  const CONSTANTS = new Set(["true", "false"]);

  // Per-character token classes of `text` (an array of class names, "" for plain).
  function classify(text) {
    const cls = new Array(text.length).fill("");
    const mark = (from, to, c) => {
      for (let k = from; k < to; k++) cls[k] = c;
    };
    let i = 0;
    while (i < text.length) {
      const ch = text[i];
      if (text.startsWith("(*", i)) {
        // Comments nest, as in OCaml.
        let depth = 0;
        let j = i;
        while (j < text.length) {
          if (text.startsWith("(*", j)) {
            depth++;
            j += 2;
          } else if (text.startsWith("*)", j)) {
            depth--;
            j += 2;
            if (depth === 0) break;
          } else j++;
        }
        mark(i, j, "tk-comment");
        // `@run` directives stand out inside their comment.
        const re = /@run\b[^\n*]*/g;
        const body = text.slice(i, j);
        let m;
        while ((m = re.exec(body))) mark(i + m.index, i + m.index + m[0].length, "tk-directive");
        i = j;
      } else if (ch === '"') {
        let j = i + 1;
        while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
        mark(i, j + 1, "tk-string");
        i = j + 1;
      } else if (text.startsWith("[@", i)) {
        const j = text.indexOf("]", i);
        const end = j < 0 ? text.length : j + 1;
        mark(i, end, "tk-attr");
        i = end;
      } else if (/[0-9]/.test(ch)) {
        const m = /^(0[xX][0-9a-fA-F_]+|[0-9][0-9_]*(\.[0-9_]*)?([eE][+-]?[0-9]+)?)[lLdf]?/.exec(text.slice(i, i + 64));
        const len = m ? m[0].length : 1;
        mark(i, i + len, "tk-number");
        i += len;
      } else if (/[A-Za-z_]/.test(ch)) {
        const m = /^[A-Za-z_][A-Za-z0-9_']*/.exec(text.slice(i, i + 128));
        let word = m[0];
        let len = word.length;
        if (word === "let" && text[i + len] === "%") {
          const ext = /^%[a-z_]+/.exec(text.slice(i + len, i + len + 32));
          if (ext) len += ext[0].length;
          mark(i, i + len, "tk-keyword");
        } else if (KEYWORDS.has(word)) mark(i, i + len, "tk-keyword");
        else if (TYPES.has(word)) mark(i, i + len, "tk-type");
        else if (CONSTANTS.has(word)) mark(i, i + len, "tk-number");
        else if (/^[A-Z]/.test(word)) mark(i, i + len, "tk-ctor");
        i += len;
      } else if ("+-*/<>=!&|^@:.;,~".includes(ch)) {
        mark(i, i + 1, "tk-op");
        i++;
      } else i++;
    }
    return cls;
  }

  function escapeHtml(s) {
    return s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  }

  // Character offset of a 1-based (line, column in characters).
  function offsetOf(text, line, column) {
    let at = 0;
    for (let l = 1; l < line; l++) {
      const nl = text.indexOf("\n", at);
      if (nl < 0) return text.length;
      at = nl + 1;
    }
    // Columns count Unicode characters; JS strings index UTF-16 units.
    let k = at;
    for (let c = 1; c < column && k < text.length && text[k] !== "\n"; c++) {
      k += text.codePointAt(k) > 0xffff ? 2 : 1;
    }
    return k;
  }

  class Editor {
    constructor(root, onChange) {
      this.root = root;
      root.classList.add("editor");
      root.innerHTML =
        '<div class="gutter" aria-hidden="true"></div>' +
        '<div class="code-area"><pre class="highlight" aria-hidden="true"><code></code></pre>' +
        '<textarea spellcheck="false" autocapitalize="off" autocomplete="off" wrap="off" aria-label="Sarek source"></textarea></div>';
      this.gutter = root.querySelector(".gutter");
      this.pre = root.querySelector(".highlight");
      this.code = root.querySelector("code");
      this.textarea = root.querySelector("textarea");
      this.markers = [];
      this.textarea.addEventListener("input", () => {
        this.markers = []; // stale once the text changes; the next compile brings new ones
        this.render();
        onChange(this.value);
      });
      this.textarea.addEventListener("scroll", () => this.syncScroll());
      this.textarea.addEventListener("keydown", (e) => {
        if (e.key === "Tab" && !e.ctrlKey && !e.metaKey) {
          e.preventDefault();
          document.execCommand("insertText", false, "  ");
        }
      });
    }

    get value() {
      return this.textarea.value;
    }

    set value(text) {
      this.textarea.value = text;
      this.markers = [];
      this.render();
    }

    // markers: [{from, to, severity, message}] in character offsets, from diagnostics.
    setDiagnostics(diagnostics) {
      const text = this.value;
      this.markers = [];
      for (const d of diagnostics || []) {
        const places = [];
        if (d.at) places.push({ at: d.at, message: d.message + (d.label ? ` (${d.label})` : "") });
        for (const s of d.secondary || []) if (s.at) places.push({ at: s.at, message: `${d.message}: ${s.message}` });
        for (const p of places) {
          const from = offsetOf(text, p.at.line, p.at.column);
          let to = offsetOf(text, p.at.endLine, p.at.endColumn);
          if (to <= from) to = Math.min(text.length, from + 1);
          this.markers.push({ from, to, line: p.at.line, severity: d.severity, message: p.message });
        }
      }
      this.render();
    }

    render() {
      const text = this.value;
      const cls = classify(text);
      const err = new Array(text.length).fill(null);
      for (const m of this.markers) for (let k = m.from; k < m.to && k < text.length; k++) err[k] = err[k] || m;
      let html = "";
      let k = 0;
      while (k < text.length) {
        let j = k + 1;
        while (j < text.length && cls[j] === cls[k] && err[j] === err[k] && text[j] !== "\n" && text[k] !== "\n") j++;
        const chunk = escapeHtml(text.slice(k, j));
        const classes = [cls[k], err[k] ? `squiggle squiggle-${err[k].severity}` : ""].filter((c) => c).join(" ");
        const title = err[k] ? ` title="${escapeHtml(err[k].message)}"` : "";
        html += classes ? `<span class="${classes}"${title}>${chunk}</span>` : chunk;
        k = j;
      }
      // A trailing newline needs a character after it to take up its line.
      this.code.innerHTML = html + "\n ";
      const lines = text.split("\n").length;
      const byLine = new Map();
      for (const m of this.markers) if (!byLine.has(m.line)) byLine.set(m.line, m);
      let g = "";
      for (let l = 1; l <= lines; l++) {
        const m = byLine.get(l);
        g += m
          ? `<div class="line marker marker-${m.severity}" title="${escapeHtml(m.message)}">${l}</div>`
          : `<div class="line">${l}</div>`;
      }
      this.gutter.innerHTML = g;
      this.syncScroll();
    }

    syncScroll() {
      this.pre.scrollTop = this.textarea.scrollTop;
      this.pre.scrollLeft = this.textarea.scrollLeft;
      this.gutter.scrollTop = this.textarea.scrollTop;
    }

    // Put the cursor at (line, column) and scroll it into view.
    reveal(line, column) {
      const at = offsetOf(this.value, line, column);
      this.textarea.focus();
      this.textarea.setSelectionRange(at, at);
      const lineHeight = parseFloat(getComputedStyle(this.textarea).lineHeight) || 18;
      this.textarea.scrollTop = Math.max(0, (line - 5) * lineHeight);
      this.syncScroll();
    }
  }

  return { Editor, classify, offsetOf };
})();
