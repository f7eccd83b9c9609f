(function () {
  "use strict";
  var holders = Array.prototype.slice.call(document.querySelectorAll("div.plot[data-figure]"));
  var body = document.body;
  var drawn = 0, failed = 0, pending = holders.length;
  function finish() {
    body.setAttribute("data-charts-drawn", String(drawn));
    body.setAttribute("data-charts-failed", String(failed));
    window.ddlxChartsDoneAt = performance.now();
    window.ddlxChartsDone = true;
  }
  function settle(ok, holder, error) {
    if (ok) { drawn += 1; } else {
      failed += 1;
      holder.textContent = "This chart could not be drawn: " + (error && error.message ? error.message : error);
      holder.className += " chart-error";
    }
    pending -= 1;
    if (pending === 0) { finish(); }
  }
  if (pending === 0) { finish(); return; }
  if (typeof window.Plotly === "undefined") {
    holders.forEach(function (holder) { settle(false, holder, "plotly.js did not load"); });
    return;
  }
  var base = JSON.parse(document.getElementById("ddlx-layout").textContent);
  var config = JSON.parse(document.getElementById("ddlx-config").textContent);
  holders.forEach(function (holder) {
    try {
      var figure = JSON.parse(document.getElementById(holder.getAttribute("data-figure")).textContent);
      var layout = figure.layout || {};
      layout.template = { layout: base };
      window.Plotly.newPlot(holder, figure.data, layout, config).then(
        function () { settle(true, holder); },
        function (error) { settle(false, holder, error); });
    } catch (error) {
      settle(false, holder, error);
    }
  });
})();
