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
})();
