/* The survey form: builds one question per attribute from the survey's configuration, randomizes
 * the answers in the browser (randomizer.js, Web Crypto) and sends only the randomized report. */
(function () {
  "use strict";
  var root = document.getElementById("survey");
  var sid = root.getAttribute("data-survey");
  var status = document.getElementById("status");
  var config = null;

  function say(text, ok) { status.textContent = text; status.className = ok ? "ok" : "error"; }

  fetch("/surveys/" + encodeURIComponent(sid) + "/config").then(function (r) {
    if (!r.ok) throw new Error("survey " + sid + " not found");
    return r.json();
  }).then(function (cfg) {
    config = cfg;
    document.getElementById("title").textContent = cfg.name;
    var fields = document.getElementById("questions");
    cfg.schema.attributes.forEach(function (a, j) {
      var label = document.createElement("label");
      label.textContent = a.name + " ";
      var select = document.createElement("select");
      select.name = a.name;
      select.id = "q-" + j;
      var skip = document.createElement("option");
      skip.value = ""; skip.textContent = "(skip this question)";
      select.appendChild(skip);
      a.categories.forEach(function (c, code) {
        var o = document.createElement("option");
        o.value = String(code); o.textContent = c;
        select.appendChild(o);
      });
      label.appendChild(select);
      var p = document.createElement("p");
      p.appendChild(label);
      fields.appendChild(p);
    });
    document.getElementById("send").disabled = false;
    root.setAttribute("data-ready", "1");
  }).catch(function (e) { say(String(e.message || e), false); });

  document.getElementById("form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var codes = {};
    config.schema.attributes.forEach(function (a, j) {
      // by position, never by name: a name is text (an apostrophe would break a selector)
      var v = document.getElementById("q-" + j).value;
      codes[a.name] = v === "" ? null : Number(v);
    });
    var report;
    try {
      report = ReidriskRandomizer.randomizeRecord(config, codes);  // Web Crypto randomness
    } catch (e) { say(String(e.message || e), false); return; }
    var code = document.getElementById("code").value.trim();
    // one person, one report: the button stays off while the report is on its way and for good
    // once it was received; a refusal or a network error turns it back on to try again
    var send = document.getElementById("send");
    if (send.disabled) return;
    send.disabled = true;
    fetch("/surveys/" + encodeURIComponent(sid) + "/reports", {
      method: "POST",
      headers: { "Content-Type": "application/json", "Authorization": "Bearer " + code },
      body: JSON.stringify(report)
    }).then(function (r) {
      return r.json().then(function (body) {
        if (r.ok) {
          say("Your randomized answers were received. Thank you.", true);
          root.setAttribute("data-sent", "1");
        } else {
          say("Not sent: " + body.detail, false);
          send.disabled = false;
        }
      });
    }).catch(function (e) { say("Not sent: " + e, false); send.disabled = false; });
  });
})();
