// Draws every chart of one report: the page's body, or one report shown inline in a notebook.
function ddlxDrawCharts(root) {
  "use strict";
  function byId(id) { return root.querySelector('[id="' + id + '"]'); }
  var holders = Array.prototype.slice.call(root.querySelectorAll("div.plot[data-figure]"));
  var body = root;
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
  var base = JSON.parse(byId("ddlx-layout").textContent);
  var config = JSON.parse(byId("ddlx-config").textContent);
  holders.forEach(function (holder) {
    try {
      var figure = JSON.parse(byId(holder.getAttribute("data-figure")).textContent);
      var layout = figure.layout || {};
      layout.template = { layout: base };
      window.Plotly.newPlot(holder, figure.data, layout, config).then(
        function () { settle(true, holder); },
        function (error) { settle(false, holder, error); });
    } catch (error) {
      settle(false, holder, error);
    }
  });
}
