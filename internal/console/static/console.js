// Live updates for the requests list: with "Live" checked, the table is
// fetched again every 5 seconds and its body replaced. Only this file
// runs: the Content-Security-Policy admits no inline script.
(function () {
  var box = document.getElementById("live");
  var table = document.getElementById("requests-table");
  if (!box || !table) return;
  var timer = null;
  function refresh() {
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("requests-table");
        if (fresh) { table.replaceChildren.apply(table, Array.from(fresh.childNodes)); }
        var status = document.getElementById("live-status");
        if (status) status.textContent = "Updated " + new Date().toLocaleTimeString();
      })
      .catch(function () {});
  }
  box.addEventListener("change", function () {
    if (box.checked) { refresh(); timer = setInterval(refresh, 5000); }
    else if (timer) { clearInterval(timer); timer = null; }
  });
})();
