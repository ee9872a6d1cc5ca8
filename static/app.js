// Switchyard console behaviour. Everything here is an enhancement: every
// form also works as a plain post without JavaScript.
(function () {
  // Forms answer 422 with the re-rendered form and its per-field errors;
  // swap those like a success. 4xx/5xx others show the error banner.
  htmx.config.responseHandling = [
    { code: "204", swap: false },
    { code: "[23]..", swap: true },
    { code: "422", swap: true },
    { code: "[45]..", swap: false, error: true },
  ];
  htmx.config.historyCacheSize = 0;

  document.addEventListener("htmx:responseError", function (ev) {
    var box = document.getElementById("flash-error");
    if (!box) return;
    var xhr = ev.detail.xhr;
    var msg = xhr.status + " " + (xhr.statusText || "");
    try {
      var j = JSON.parse(xhr.responseText);
      if (j && j.error && j.error.message) msg = j.error.message;
    } catch (e) {
      var t = (xhr.responseText || "").replace(/<[^>]*>/g, " ").replace(/\s+/g, " ").trim();
      if (t) msg = t.slice(0, 300);
    }
    box.textContent = msg;
    box.hidden = false;
  });
  document.addEventListener("htmx:beforeRequest", function () {
    var box = document.getElementById("flash-error");
    if (box) box.hidden = true;
  });

  // A dry-run finding links to the control that fixes it (#its-id): open
  // the <details> it sits in, and put the cursor in it.
  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    if (!el) return;
    for (var d = el.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) d.open = true;
    if (el.matches("input, select, textarea")) el.focus({ preventScroll: true });
    el.scrollIntoView({ block: "center" });
  }
  window.addEventListener("hashchange", openTarget);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", openTarget);
  else openTarget();

  // Copy buttons: <button data-copy="#id"> copies that element's text.
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest("[data-copy]");
    if (!b) return;
    var el = document.querySelector(b.getAttribute("data-copy"));
    if (!el) return;
    var text = el.value !== undefined ? el.value : el.textContent;
    navigator.clipboard && navigator.clipboard.writeText(text.trim());
    var old = b.textContent;
    b.textContent = "Copied";
    setTimeout(function () { b.textContent = old; }, 1500);
  });

  // Narrow screens: the Menu button opens and closes the navigation.
  document.addEventListener("click", function (ev) {
    var t = ev.target.closest(".menu-toggle");
    if (!t) return;
    ev.preventDefault();
    var nav = t.closest("nav.side");
    var open = !nav.classList.contains("open");
    nav.classList.toggle("open", open);
    t.setAttribute("aria-expanded", open ? "true" : "false");
    if (open) {
      var first = nav.querySelector(".side-links a");
      if (first) first.focus();
    }
  });
  document.addEventListener("keydown", function (ev) {
    var t = ev.target.closest && ev.target.closest(".menu-toggle");
    if (t && ev.key === " ") { ev.preventDefault(); t.click(); return; }
    if (ev.key !== "Escape") return;
    var nav = document.querySelector("nav.side.open");
    if (!nav) return;
    nav.classList.remove("open");
    var btn = nav.querySelector(".menu-toggle");
    btn.setAttribute("aria-expanded", "false");
    btn.focus();
  });

  // A table wider than its frame scrolls inside it; keyboard users reach
  // it with Tab and scroll it with the arrow keys.
  function markScrollable(root) {
    (root || document).querySelectorAll(".table-wrap, .diff, pre").forEach(function (el) {
      if (el.scrollWidth > el.clientWidth + 1) {
        if (!el.hasAttribute("tabindex")) {
          el.setAttribute("tabindex", "0");
          el.setAttribute("data-scroll-focus", "");
          if (!el.hasAttribute("role")) el.setAttribute("role", "region");
          if (!el.hasAttribute("aria-label")) {
            var cap = el.querySelector("caption, th");
            el.setAttribute("aria-label", "Scrollable " + (el.matches(".table-wrap") ? "table" : "text") + (cap ? ": " + cap.textContent.trim().slice(0, 40) : ""));
          }
        }
      } else if (el.hasAttribute("data-scroll-focus")) {
        el.removeAttribute("tabindex");
        el.removeAttribute("data-scroll-focus");
        el.removeAttribute("role");
        el.removeAttribute("aria-label");
      }
    });
  }
  window.addEventListener("resize", function () { markScrollable(); });
  document.addEventListener("DOMContentLoaded", function () { markScrollable(); labelCells(); });

  // Under 600 px a table's rows stack (app.css): each cell shows its
  // column's heading from data-label. Cells the template did not label get
  // their column's heading here (a colspan counts its columns).
  function labelCells(root) {
    (root || document).querySelectorAll(".table-wrap > table").forEach(function (table) {
      var heads = Array.prototype.map.call(table.querySelectorAll(":scope > thead > tr:first-child > th"), function (th) {
        return { text: (th.getAttribute("data-label") || th.textContent).trim(), span: th.colSpan || 1 };
      });
      if (!heads.length) return;
      var cols = [];
      heads.forEach(function (h) { for (var i = 0; i < h.span; i++) cols.push(h.text); });
      table.querySelectorAll(":scope > tbody > tr").forEach(function (tr) {
        var col = 0;
        Array.prototype.forEach.call(tr.children, function (td) {
          if (td.tagName === "TD" && !td.hasAttribute("data-label") && td.colSpan === 1 && cols[col]) td.setAttribute("data-label", cols[col]);
          col += td.colSpan || 1;
        });
      });
    });
  }

  // A region htmx refreshes (the Health board every 15 s) keeps what the
  // operator opened: <details> with an id that were open stay open.
  var reopen = [];
  document.addEventListener("htmx:beforeSwap", function (ev) {
    var target = ev.detail.target;
    reopen = target ? Array.prototype.map.call(target.querySelectorAll("details[id][open]"), function (d) { return d.id; }) : [];
    if (target && target.matches("details[id][open]")) reopen.push(target.id);
  });
  document.addEventListener("htmx:afterSettle", function (ev) {
    reopen.forEach(function (id) {
      var d = document.getElementById(id);
      if (d && d.tagName === "DETAILS") d.open = true;
    });
    reopen = [];
    markScrollable();
    labelCells();
  });
})();
