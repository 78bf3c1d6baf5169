// Live updates, by polling a fragment of the page the server renders:
// - the requests list: with "Live" checked (the default on the first
//   page), its table is fetched again (?fragment=rows) and replaced;
// - a request's page: while the request is not final, its row, what an
//   approval decides and its decisions (/requests/ID/live) are fetched
//   and replaced, until the request ends.
// The fetches carry X-Execledger-Live, so they do not keep an idle
// session open: once it ends, the updates stop and say so. Only this file
// runs: the Content-Security-Policy admits no inline script.
(function () {
  "use strict";
  var every = 2000;

  // fetchElement fetches url and returns the element with id from it;
  // null when the response holds none (the session ended: the sign-in
  // page came back).
  function fetchElement(url, id) {
    return fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html", "X-Execledger-Live": "1" } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(new Error("HTTP " + r.status)); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var el = doc.getElementById(id);
        return el ? document.importNode(el, true) : null;
      });
  }

  function say(status, text) {
    if (status) status.textContent = text;
  }

  function now() { return new Date().toLocaleTimeString(); }

  // The requests list.
  var box = document.getElementById("live");
  var listStatus = document.getElementById("live-status");
  if (box && document.getElementById("requests-table")) {
    var timer = null;
    var refresh = function () {
      var u = new URL(window.location.href);
      u.searchParams.set("fragment", "rows");
      fetchElement(u.toString(), "requests-table").then(function (fresh) {
        if (!fresh) {
          stop();
          say(listStatus, "Live updates stopped: the session has ended. Reload to sign in again.");
          return;
        }
        // The table's contents, not the table: the element stays the
        // same one for whatever holds it (focus, a screen reader).
        document.getElementById("requests-table").replaceChildren.apply(
          document.getElementById("requests-table"), Array.from(fresh.childNodes));
        say(listStatus, "Updated " + now());
      }).catch(function (e) { say(listStatus, "Live update failed (" + e.message + "); retrying."); });
    };
    var stop = function () {
      if (timer) { clearInterval(timer); timer = null; }
    };
    var follow = function () {
      stop();
      if (box.checked) { refresh(); timer = setInterval(refresh, every); } else { say(listStatus, ""); }
    };
    box.addEventListener("change", follow);
    follow();
  }

  // One request's page.
  var live = document.getElementById("request-live");
  var reqStatus = document.getElementById("request-live-status");
  if (live && live.getAttribute("data-final") !== "true") {
    var reqTimer = setInterval(function () {
      fetchElement(live.getAttribute("data-src"), "request-live-body").then(function (fresh) {
        if (!fresh) {
          clearInterval(reqTimer);
          say(reqStatus, "Live updates stopped: the session has ended. Reload to sign in again.");
          return;
        }
        var body = document.getElementById("request-live-body");
        body.replaceChildren.apply(body, Array.from(fresh.childNodes));
        body.setAttribute("data-final", fresh.getAttribute("data-final"));
        if (fresh.getAttribute("data-final") === "true") {
          clearInterval(reqTimer);
          live.setAttribute("data-final", "true");
          say(reqStatus, "The request has ended (" + now() + "). Reload for its attestation, inclusion proofs and timeline.");
        } else {
          say(reqStatus, "Updated " + now() + "; updated live until the request ends.");
        }
      }).catch(function (e) { say(reqStatus, "Live update failed (" + e.message + "); retrying."); });
    }, every);
  }
})();
