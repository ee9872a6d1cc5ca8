// Call logs: times in the operator's own zone, and the custom range's date
// fields reachable only when the range is custom. Without JavaScript the
// page shows UTC and the server keeps the fields disabled for a preset.
(function () {
  function pad(n, w) { return String(n).padStart(w || 2, "0"); }

  // <time datetime="…Z" data-local-time> shows its instant in local time;
  // its title keeps the UTC time.
  function localTimes(root) {
    (root || document).querySelectorAll("time[data-local-time]").forEach(function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d)) return;
      el.textContent = d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
        pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + "." + pad(d.getMilliseconds(), 3);
      el.setAttribute("data-local", "");
    });
  }

  // A disabled field is no tab stop and is not sent.
  function customRange() {
    var sel = document.querySelector('select[name="range"]');
    if (!sel) return;
    document.querySelectorAll("input[data-custom-range]").forEach(function (el) {
      el.disabled = sel.value !== "custom";
    });
  }

  document.addEventListener("change", function (ev) {
    if (ev.target.matches && ev.target.matches('select[name="range"]')) customRange();
  });
  document.addEventListener("htmx:afterSettle", function () { localTimes(); });
  function init() { localTimes(); customRange(); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
