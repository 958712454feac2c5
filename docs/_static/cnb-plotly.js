// Draws the plotly figures a notebook saved (application/vnd.plotly.v1+json). docs/build.py turns each into
// <div class="cnb-plotly"><div class="cnb-plotly-target"></div><script type="application/json">{data, layout, config}</script></div>;
// plotly.js itself is the copy in _static, loaded before this file on the pages that need it.
(function () {
  function draw() {
    document.querySelectorAll("div.cnb-plotly:not([data-drawn])").forEach(function (box) {
      var spec = JSON.parse(box.querySelector("script.cnb-plotly-spec").textContent);
      var config = Object.assign({responsive: true, displaylogo: false}, spec.config || {});
      box.setAttribute("data-drawn", "1");
      window.Plotly.newPlot(box.querySelector(".cnb-plotly-target"), spec.data || [], spec.layout || {}, config);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw);
  else draw();
})();
